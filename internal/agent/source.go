package agent

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"

	"github.com/gpuheal/gpuheal/internal/gpu"
	"github.com/gpuheal/gpuheal/internal/gpu/nvml"
	"github.com/gpuheal/gpuheal/internal/gpu/sim"
	"github.com/gpuheal/gpuheal/internal/gpu/smi"
)

// ErrNoGPU means no backend could reach a GPU; gpuheal-agent exits 3.
var ErrNoGPU = errors.New("no NVIDIA GPU found")

// noGPU wraps the reasons so the one-line message reads
// "no NVIDIA GPU found: nvml: …; smi: …".
type noGPUError struct{ reason string }

func (e *noGPUError) Error() string   { return ErrNoGPU.Error() + ": " + e.reason }
func (e *noGPUError) Is(t error) bool { return t == ErrNoGPU }

// openSource returns the backend the options ask for; auto tries NVML, then
// nvidia-smi.
func openSource(o *Options) (gpu.Source, error) {
	switch o.Backend {
	case BackendSim:
		return openSim(o)
	case BackendNVML:
		s, err := nvml.New(nvmlOptions(o))
		if err != nil {
			return nil, &noGPUError{reason: "nvml: " + trimNoGPU(err)}
		}
		return s, nil
	case BackendSMI:
		return openSMI(o)
	}
	s, nvmlErr := nvml.New(nvmlOptions(o))
	if nvmlErr == nil {
		return s, nil
	}
	smiSrc, smiErr := openSMI(o)
	if smiErr == nil {
		return smiSrc, nil
	}
	return nil, &noGPUError{reason: fmt.Sprintf("nvml: %s; smi: %s", trimNoGPU(nvmlErr), trimNoGPU(smiErr))}
}

func nvmlOptions(o *Options) nvml.Options {
	return nvml.Options{CallTimeout: o.CallTimeout, ExpectedGPUs: o.ExpectedGPUs, DriverRoot: o.DriverRoot}
}

func openSMI(o *Options) (gpu.Source, error) {
	path, err := exec.LookPath(o.SMIPath)
	if err != nil {
		return nil, &noGPUError{reason: fmt.Sprintf("nvidia-smi not found at %q", o.SMIPath)}
	}
	return smi.New(smi.Options{Path: path, Timeout: o.CallTimeout}), nil
}

func openSim(o *Options) (gpu.Source, error) {
	so := sim.Options{NodeName: o.NodeName, GPUs: o.Sim.GPUs, Model: o.Sim.Model, Seed: o.Sim.Seed}
	if so.NodeName == "" {
		so.NodeName = "sim-0"
	}
	if o.Sim.ScheduleFile != "" {
		f, err := os.Open(o.Sim.ScheduleFile)
		if err != nil {
			return nil, fmt.Errorf("--sim-schedule: %w", err)
		}
		defer func() { _ = f.Close() }()
		sched, err := sim.LoadSchedule(f)
		if err != nil {
			return nil, fmt.Errorf("--sim-schedule %s: %w", o.Sim.ScheduleFile, err)
		}
		so.Schedule = sched
	}
	if o.Sim.KernelLogFile != "" {
		f, err := os.OpenFile(o.Sim.KernelLogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, fmt.Errorf("--sim-kernel-log: %w", err)
		}
		so.KernelLog = f
	}
	n, err := sim.New(so)
	if err != nil {
		if c, ok := so.KernelLog.(io.Closer); ok {
			_ = c.Close()
		}
		return nil, fmt.Errorf("sim backend: %w", err)
	}
	if c, ok := so.KernelLog.(io.Closer); ok {
		return &closingSource{Source: n, extra: c}, nil
	}
	return n, nil
}

// closingSource closes a file the backend writes to along with it.
type closingSource struct {
	gpu.Source
	extra io.Closer
}

func (s *closingSource) Close() error { return errors.Join(s.Source.Close(), s.extra.Close()) }

// trimNoGPU drops a backend's own "no NVIDIA GPU found: " prefix so the
// combined message says it once.
func trimNoGPU(err error) string {
	msg := err.Error()
	const p = "no NVIDIA GPU found: "
	if len(msg) > len(p) && msg[:len(p)] == p {
		return msg[len(p):]
	}
	return msg
}
