package gpureset

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gpuheal/gpuheal/internal/gpu"
	"github.com/gpuheal/gpuheal/internal/procs"
)

// SMIDevice is Device through the nvidia-smi binary at Path. Each call
// runs it through internal/procs (own process group, killed if the agent
// dies) and stops it when ctx ends.
type SMIDevice struct {
	Path string
	// Env is added to the tool's environment (LD_LIBRARY_PATH for a
	// driver root's nvidia-smi).
	Env []string
	// Run runs the tool; nil is procs (tests give a fake).
	Run func(ctx context.Context, path string, args ...string) (out string, failed bool, err error)
}

// SMIBusID is the bus ID as nvidia-smi's -i takes and prints it
// (00000000:1B:00.0) for a normalized one (0000:1b:00.0).
func SMIBusID(bus string) string {
	return "0000" + strings.ToUpper(bus)
}

var _ Device = (*SMIDevice)(nil)

func (d *SMIDevice) run(ctx context.Context, args ...string) (string, bool, error) {
	if d.Run != nil {
		return d.Run(ctx, d.Path, args...)
	}
	return RunCommand(ctx, d.Env, d.Path, args...)
}

// GPUProcesses lists the compute applications on the GPU (nvidia-smi
// --query-compute-apps; graphics clients show there too on data-center
// GPUs, and a display's X server makes the reset fail PrimaryGPU anyway).
func (d *SMIDevice) GPUProcesses(ctx context.Context, bus string) ([]int, error) {
	out, failed, err := d.run(ctx, "--query-compute-apps=pid,gpu_bus_id", "--format=csv,noheader,nounits")
	if err != nil {
		return nil, err
	}
	if failed {
		return nil, fmt.Errorf("nvidia-smi --query-compute-apps: %s", firstLine(out))
	}
	return ParseComputeApps(out, bus)
}

// ParseComputeApps reads `pid, gpu_bus_id` lines and returns the PIDs on
// bus. "No running processes found" and empty output are no processes.
func ParseComputeApps(out, bus string) ([]int, error) {
	if len(out) > MaxOutput*16 {
		return nil, fmt.Errorf("nvidia-smi --query-compute-apps: %d bytes of output, more than %d", len(out), MaxOutput*16)
	}
	var pids []int
	n := 0
	for line := range strings.Lines(out) {
		n++
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(strings.ToLower(line), "no running processes") {
			continue
		}
		pidText, busText, ok := strings.Cut(line, ",")
		if !ok {
			return nil, fmt.Errorf("nvidia-smi --query-compute-apps line %d %q: want pid, gpu_bus_id", n, clean(line))
		}
		pid, err := strconv.Atoi(strings.TrimSpace(pidText))
		if err != nil || pid <= 0 {
			return nil, fmt.Errorf("nvidia-smi --query-compute-apps line %d: pid %q is not a process id", n, clean(pidText))
		}
		b, err := gpu.NormalizePCIBusID(busText)
		if err != nil {
			return nil, fmt.Errorf("nvidia-smi --query-compute-apps line %d: %w", n, err)
		}
		if b == bus {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// SetPersistenceMode runs nvidia-smi -i <bus> -pm 0|1.
func (d *SMIDevice) SetPersistenceMode(ctx context.Context, bus string, on bool) error {
	mode := "0"
	if on {
		mode = "1"
	}
	out, failed, err := d.run(ctx, "-i", SMIBusID(bus), "-pm", mode)
	if err != nil {
		return err
	}
	if failed {
		return fmt.Errorf("nvidia-smi -pm %s: %s", mode, firstLine(out))
	}
	return nil
}

// ResetGPU runs nvidia-smi --gpu-reset -i <bus>.
func (d *SMIDevice) ResetGPU(ctx context.Context, bus string) (string, bool, error) {
	return d.run(ctx, "--gpu-reset", "-i", SMIBusID(bus))
}

// RunCommand runs path with args (and env added) through internal/procs and returns its
// output (stdout and stderr, the first MaxOutput*16 bytes) and whether it
// exited non-zero. When ctx ends first the process is stopped and
// ctx's error returned.
func RunCommand(ctx context.Context, env []string, path string, args ...string) (string, bool, error) {
	out := &cappedBuffer{limit: MaxOutput * 16}
	p, err := procs.Command{Path: path, Args: args, Env: env, Output: out}.Start()
	if err != nil {
		return "", false, err
	}
	select {
	case <-p.Done():
	case <-ctx.Done():
		_ = p.Stop(2 * time.Second)
		return out.String(), true, ctx.Err()
	}
	if err := p.Err(); err != nil {
		var exit interface{ ExitCode() int }
		if errors.As(err, &exit) && exit.ExitCode() > 0 {
			return out.String(), true, nil
		}
		return out.String(), true, fmt.Errorf("%s: %w", path, err)
	}
	return out.String(), false, nil
}

// cappedBuffer keeps the first limit bytes written and drops the rest
// (the child must not block on a full pipe).
type cappedBuffer struct {
	mu    sync.Mutex
	limit int
	b     bytes.Buffer
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := c.limit - c.b.Len(); room > 0 {
		c.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (c *cappedBuffer) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.b.String()
}
