package agent

import (
	"context"
	"log/slog"
	"path/filepath"

	"k8s.io/utils/clock"

	"github.com/gpuheal/gpuheal/internal/detect"
	"github.com/gpuheal/gpuheal/internal/fabric"
	"github.com/gpuheal/gpuheal/internal/finding"
	"github.com/gpuheal/gpuheal/internal/kmsg"
)

// fabricReader reads the host's RDMA devices each collection, or nil
// when --fabric is off. The sim backend brings its own fabric in its
// snapshots and reads none from the machine it runs on, unless --sysfs
// names a tree (the agent's benchmark reads a fixture that way).
//
// One Reader lives as long as the agent: it keeps the devices' fixed
// attributes and their counter files open between collections, so a read
// is one pread per value (docs/benchmarks.md, "RDMA fabric read").
func fabricReader(o *Options) *fabric.Reader {
	if !o.Fabric || o.Backend == BackendSim && o.SysfsPath == "" {
		return nil
	}
	root := o.SysfsPath
	if root == "" {
		root = filepath.Join(o.HostRoot, "sys")
	}
	return fabric.NewReader(fabric.ReadOptions{Root: root})
}

// followFabricManagerLog follows NVIDIA Fabric Manager's log from its end
// and hands its failure findings on, until ctx ends. Lines written while
// the agent was down are not read: the log has no sequence numbers to
// resume by, and an NVSwitch failure also shows in the kernel log (SXid)
// and in the GPUs' fabric state, which the agent reads either way.
func followFabricManagerLog(ctx context.Context, path string, c clock.Clock, onFinding func(finding.Finding), log *slog.Logger) {
	clk, ok := c.(clock.WithTicker)
	if !ok {
		clk = clock.RealClock{}
	}
	det := detect.NewFabricManager(detect.FMOptions{})
	var buf []finding.Finding
	err := kmsg.Follow(ctx, path, kmsg.Options{Clock: clk, FromEnd: true}, func(rec kmsg.Record) error {
		buf = det.Append(buf[:0], rec.Message)
		for _, f := range buf {
			onFinding(f)
		}
		return nil
	})
	if err != nil && ctx.Err() == nil {
		log.Error("following the Fabric Manager log stopped", "path", path, "err", err)
	}
}
