package simfleet

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/gpuheal/gpuheal/internal/gpu"
	"github.com/gpuheal/gpuheal/internal/gpu/smi"
	"github.com/gpuheal/gpuheal/internal/simfleet/schedule"
)

// smiChaosSource reads the GPUs through the real nvidia-smi backend and
// parser while the node's chaos file exists, and from the simulated node
// otherwise (schedule.SMIChaosDir says why).
type smiChaosSource struct {
	gpu.Source
	path string
	smi  *smi.Source
}

func newSMIChaosSource(sim gpu.Source, dir, node string, callTimeout time.Duration) *smiChaosSource {
	s := &smiChaosSource{Source: sim, path: filepath.Join(dir, schedule.SMIChaosDir, node)}
	s.smi = smi.New(smi.Options{Path: "nvidia-smi", Timeout: callTimeout, Run: s.output})
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

// closingSource closes the kernel-log file the simulated GPUs write to
// along with them.
type closingSource struct {
	gpu.Source
	extra io.Closer
}

func (s *closingSource) Close() error { return errors.Join(s.Source.Close(), s.extra.Close()) }
