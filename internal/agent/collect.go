package agent

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/gpuheal/gpuheal/internal/agent/exporter"
	"github.com/gpuheal/gpuheal/internal/fabric"
	"github.com/gpuheal/gpuheal/internal/gpu"
	"github.com/gpuheal/gpuheal/internal/gpu/host"
)

// collector takes one snapshot per interval. Each pass is bounded by the
// interval: a backend that hangs past it yields a failed pass (and an
// error in the metrics), never a stalled agent.
type collector struct {
	src          gpu.Source
	hostOpts     host.Options
	probeHost    bool
	expectedGPUs func() int
	// readFabric reads the node's RDMA devices (nil: not read), with
	// expectedRDMA the device count the node should have (0: unknown). A
	// snapshot that comes with a fabric (the sim's) keeps it.
	readFabric   *fabric.Reader
	expectedRDMA func() int
	exp          *exporter.Exporter
	// onSnapshot receives every snapshot, nil when the backend failed.
	onSnapshot func(*gpu.NodeSnapshot)
	// beforeExport, when set, sees every snapshot (nil when the backend
	// failed) before the exporter renders it: the predictor, whose risks
	// are then encoded with the snapshot they come from.
	beforeExport func(*gpu.NodeSnapshot)
	log          *slog.Logger
	now          func() time.Time
	// returnMemory: see Options.ReturnMemory.
	returnMemory bool
}

// collectOnce reads the GPUs and the host, updates the exporter and returns
// the snapshot. A backend error still updates the exporter (collector
// success 0) so the failure is visible on /metrics.
func (c *collector) collectOnce(ctx context.Context, timeout time.Duration) (*gpu.NodeSnapshot, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	start := c.now()
	snap, err := c.src.Snapshot(ctx)
	results := []exporter.CollectorResult{{Name: "gpu", Success: err == nil, Duration: c.now().Sub(start)}}
	if err != nil {
		if c.beforeExport != nil {
			c.beforeExport(nil)
		}
		c.exp.Update(nil, results)
		if c.onSnapshot != nil {
			c.onSnapshot(nil)
		}
		return nil, fmt.Errorf("reading GPUs through %s: %w", c.src.Name(), err)
	}
	if c.probeHost {
		hs := c.now()
		facts, errs := host.Probe(c.hostOpts)
		host.Fill(snap, facts, errs)
		results = append(results, exporter.CollectorResult{Name: "host", Success: len(errs) == 0, Duration: c.now().Sub(hs)})
	}
	if n := c.expectedGPUs(); n > 0 {
		snap.ExpectedGPUs = n
	}
	if snap.Fabric == nil && c.readFabric != nil {
		fs := c.now()
		f, err := c.readFabric.Read(ctx)
		// A read cut short by the pass's deadline reports nothing: a
		// half-read fabric would look like devices gone missing.
		if err == nil {
			snap.Fabric = f
		}
		results = append(results, exporter.CollectorResult{Name: "fabric", Success: err == nil && len(f.Errors) == 0, Duration: c.now().Sub(fs)})
	}
	if c.expectedRDMA != nil && snap.Fabric != nil {
		if n := c.expectedRDMA(); n > 0 {
			snap.Fabric.ExpectedDevices = n
		}
	}
	if c.beforeExport != nil {
		c.beforeExport(snap)
	}
	c.exp.Update(snap, results)
	if c.onSnapshot != nil {
		c.onSnapshot(snap)
	}
	return snap, nil
}

// run collects every interval until ctx ends.
func (c *collector) run(ctx context.Context, interval time.Duration) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		if _, err := c.collectOnce(ctx, interval); err != nil && ctx.Err() == nil {
			c.log.Warn("collection failed", "err", err)
		}
		if c.returnMemory {
			// A collection allocates ~2 MB that is garbage once the
			// metrics are encoded, and the agent then idles for the rest
			// of the interval: return those pages now rather than let
			// the scavenger do it over minutes (docs/benchmarks.md).
			debug.FreeOSMemory()
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
