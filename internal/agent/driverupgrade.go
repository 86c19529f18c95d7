package agent

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/finding"
	"github.com/gpuheal/gpuheal/internal/gpu"
)

// driverGate is the GPU backend as the GPU Operator's driver upgrades
// allow it. While the node's upgrade state says the driver is being
// replaced, the backend is closed (nvmlShutdown: an open NVML handle keeps
// the kernel module loaded and the upgrade from going on), reads fail on
// purpose and the health rules are paused, so no condition turns
// unhealthy because the driver is gone. When the upgrade is over the next
// read opens the backend again; a driver that does not come back then
// fails reads like any broken driver.
type driverGate struct {
	open func() (gpu.Source, error)
	name string
	log  *slog.Logger

	mu    sync.Mutex
	src   gpu.Source // nil while released, or until reopening succeeds
	state string     // the upgrade state last read from the node
	// released is read without mu by the health side, which must not wait
	// for a snapshot in flight.
	released atomic.Bool
	// resetting: the backend is released for a GPU reset (gpureset.go),
	// apart from the upgrade state, which must not reopen it.
	resetting atomic.Bool
	// resetBuses are the GPUs being reset while resetting (nil else).
	resetBuses atomic.Pointer[map[string]bool]
}

func newDriverGate(src gpu.Source, open func() (gpu.Source, error), log *slog.Logger) *driverGate {
	return &driverGate{open: open, name: src.Name(), log: log, src: src}
}

func (g *driverGate) Name() string { return g.name }

func (g *driverGate) Snapshot(ctx context.Context) (*gpu.NodeSnapshot, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.released.Load() {
		return nil, fmt.Errorf("GPU backend released while the GPU Operator upgrades the driver (%s=%s)", v1alpha1.LabelNvidiaDriverUpgradeState, g.state)
	}
	if g.resetting.Load() {
		return nil, errReleasedForReset
	}
	if g.src == nil {
		src, err := g.open()
		if err != nil {
			return nil, fmt.Errorf("opening the GPU backend again after the driver upgrade: %w", err)
		}
		g.src = src
		g.log.Info("GPU backend open again after the driver upgrade", "backend", src.Name(), "state", g.state)
	}
	return g.src.Snapshot(ctx)
}

func (g *driverGate) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.src == nil {
		return nil
	}
	err := g.src.Close()
	g.src = nil
	return err
}

// paused reports whether the driver is released or the backend closed for
// a GPU reset: reads fail on purpose and say nothing about the GPUs.
func (g *driverGate) paused() bool { return g.released.Load() || g.resetting.Load() }

// setState applies the node's upgrade state ("" when it has no label).
func (g *driverGate) setState(state string) {
	release := v1alpha1.DriverUpgradeReleasesDriver(state)
	g.mu.Lock()
	defer g.mu.Unlock()
	g.state = state
	if release == g.released.Load() {
		return
	}
	g.released.Store(release)
	if !release {
		g.log.Info("driver upgrade over: health rules resume, GPU backend opens at the next read", "state", state)
		return
	}
	if g.src != nil {
		if err := g.src.Close(); err != nil {
			g.log.Warn("closing GPU backend for the driver upgrade", "err", err)
		}
		g.src = nil
	}
	g.log.Info("driver upgrade in progress: GPU backend released, health rules paused", "state", state)
}

// dropWhilePaused passes findings on except while the driver is released
// (unloading a driver logs to the kernel, and those lines are no fault)
// and, during a GPU reset, those of the GPUs being reset (the reset's own
// artefacts). Another GPU's fault during a reset still counts: it may
// need its own remedy, and a reset takes up to minutes.
func (g *driverGate) dropWhilePaused(next func(finding.Finding)) func(finding.Finding) {
	return func(f finding.Finding) {
		if g.released.Load() || g.resettingGPU(f.GPU) {
			return
		}
		next(f)
	}
}

// resettingGPU says whether the GPU at bus is being reset now.
func (g *driverGate) resettingGPU(bus string) bool {
	if bus == "" || !g.resetting.Load() {
		return false
	}
	set := g.resetBuses.Load()
	return set != nil && (*set)[bus]
}
