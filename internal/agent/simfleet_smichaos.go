package agent

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	"github.com/gpuheal/gpuheal/internal/gpu"
	"github.com/gpuheal/gpuheal/internal/gpu/smi"
)

// SMIChaosDir is where, under --sim-fleet-dir, a file named after a node
// makes that node's agent read "nvidia-smi -q -x" output from it instead of
// its simulated GPUs: the soak puts broken output there (cut XML, noise,
// the driver's error text, nothing at all) to check that a damaged read
// never becomes a repair by itself. An empty file stands for nvidia-smi
// failing with no output.
const SMIChaosDir = "smi-chaos"

// smiChaosSource reads the GPUs through the real nvidia-smi backend and
// parser while the node's chaos file exists, and from the simulated node
// otherwise.
type smiChaosSource struct {
	gpu.Source
	path string
	smi  *smi.Source
}

func newSMIChaosSource(sim gpu.Source, dir, node string, o *Options) *smiChaosSource {
	s := &smiChaosSource{Source: sim, path: filepath.Join(dir, SMIChaosDir, node)}
	s.smi = smi.New(smi.Options{Path: "nvidia-smi", Timeout: o.CallTimeout, Run: s.output})
	return s
}

var errSMIFailed = errors.New("exit status 9") // what nvidia-smi exits with when it cannot reach the driver

func (s *smiChaosSource) output(context.Context, string, ...string) ([]byte, error) {
	out, err := os.ReadFile(s.path)
	if err == nil && len(out) == 0 {
		return nil, errSMIFailed
	}
	return out, err
}

func (s *smiChaosSource) Snapshot(ctx context.Context) (*gpu.NodeSnapshot, error) {
	if _, err := os.Stat(s.path); err == nil {
		return s.smi.Snapshot(ctx)
	}
	return s.Source.Snapshot(ctx)
}
