package agent

import (
	"context"
	"slices"
	"sync"

	"github.com/gpuheal/gpuheal/internal/agent/nodestatus"
	"github.com/gpuheal/gpuheal/internal/analyzer"
	"github.com/gpuheal/gpuheal/internal/finding"
	"github.com/gpuheal/gpuheal/internal/gpu"
)

// healthLoop runs the analyzer whenever something new arrives: a snapshot
// from the collection loop, or a finding from the kernel log. A finding is
// evaluated (and so published) the moment it is read, not at the next
// collection, which is what keeps an Xid 79 seconds ahead of a poller.
type healthLoop struct {
	engine *analyzer.Engine
	// onResult receives every evaluation (condition publishing, metrics)
	// and the number of healthy GPUs.
	onResult func(r analyzer.Result, healthyGPUs int)
	// conditions publishes on the Node (nil outside a cluster); other
	// sources of conditions (the predictor) publish through it too.
	conditions *nodestatus.Conditions

	mu    sync.Mutex
	hooks []func(*analyzer.RuleSet)
	// before sees each evaluation ahead of onResult (the GPU fault report,
	// which must reach the Node before the conditions).
	before  func(context.Context, *gpu.NodeSnapshot, analyzer.Result)
	snap    *gpu.NodeSnapshot
	pending []finding.Finding
	wake    chan struct{}
	// forget are GPUs (bus IDs) reset since the last evaluation, whose
	// problems from before the reset the next one drops (forgetGPU).
	forget      []string
	forgetHooks []func(bus string)
}

func newHealthLoop(e *analyzer.Engine, onResult func(analyzer.Result, int)) *healthLoop {
	return &healthLoop{engine: e, onResult: onResult, wake: make(chan struct{}, 1)}
}

func (h *healthLoop) setSnapshot(s *gpu.NodeSnapshot) {
	h.mu.Lock()
	h.snap = s
	h.mu.Unlock()
	h.poke()
}

func (h *healthLoop) addFinding(f finding.Finding) {
	h.mu.Lock()
	h.pending = append(h.pending, f)
	h.mu.Unlock()
	h.poke()
}

// onReload registers fn to run with each reloaded rule set (the kernel-log
// detector takes the config's Xid overrides from it).
func (h *healthLoop) onReload(fn func(*analyzer.RuleSet)) {
	h.mu.Lock()
	h.hooks = append(h.hooks, fn)
	h.mu.Unlock()
}

// setBeforeResult has fn see every evaluation before onResult.
func (h *healthLoop) setBeforeResult(fn func(context.Context, *gpu.NodeSnapshot, analyzer.Result)) {
	h.mu.Lock()
	h.before = fn
	h.mu.Unlock()
}

func (h *healthLoop) reloaded(rs *analyzer.RuleSet) {
	h.mu.Lock()
	hooks := slices.Clone(h.hooks)
	h.mu.Unlock()
	for _, fn := range hooks {
		fn(rs)
	}
}

// lastSnapshot is the latest snapshot handed to the loop (nil before the
// first, or after a failed read).
func (h *healthLoop) lastSnapshot() *gpu.NodeSnapshot {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.snap
}

// onForget registers fn to run with each GPU forgetGPU forgets (the
// fatal-finding journal drops its findings, so a restart does not replay
// them).
func (h *healthLoop) onForget(fn func(bus string)) {
	h.mu.Lock()
	h.forgetHooks = append(h.forgetHooks, fn)
	h.mu.Unlock()
}

// forgetGPU drops what the loop knows of the GPU at bus from before now
// (its pending findings, the engine's problems, the journal's findings)
// and evaluates at once: the GPU was reset and verified.
func (h *healthLoop) forgetGPU(bus string) {
	h.mu.Lock()
	h.pending = slices.DeleteFunc(h.pending, func(f finding.Finding) bool { return f.GPU == bus })
	h.forget = append(h.forget, bus)
	hooks := slices.Clone(h.forgetHooks)
	h.mu.Unlock()
	for _, fn := range hooks {
		fn(bus)
	}
	h.poke()
}

func (h *healthLoop) poke() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// run evaluates on every wake-up until ctx ends. Findings are handed to
// the engine once: it remembers them for as long as their rules say.
func (h *healthLoop) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-h.wake:
		}
		h.mu.Lock()
		snap, findings, forget, before := h.snap, h.pending, h.forget, h.before
		h.pending, h.forget = nil, nil
		h.mu.Unlock()
		for _, bus := range forget {
			h.engine.ForgetGPU(bus)
		}
		r := h.engine.Evaluate(snap, findings)
		if before != nil {
			before(ctx, snap, r)
		}
		h.onResult(r, healthyGPUs(snap, r))
	}
}

// healthyGPUs counts the GPUs that answer and have no active fatal
// problem: what a scheduler can still count on. Without a snapshot (the
// backend fails) it is 0.
func healthyGPUs(snap *gpu.NodeSnapshot, r analyzer.Result) int {
	if snap == nil {
		return 0
	}
	sick := map[string]bool{}
	for _, p := range r.Problems {
		if p.Severity == finding.Fatal && p.GPU != nil {
			sick[p.GPU.PCIBusID] = true
		}
	}
	n := 0
	for _, g := range snap.GPUs {
		if !g.Missing && !sick[g.PCIBusID] {
			n++
		}
	}
	return n
}

// activeWarnings counts the warning-severity problems active now.
func activeWarnings(r analyzer.Result) int {
	n := 0
	for _, p := range r.Problems {
		if p.Severity == finding.Warning {
			n++
		}
	}
	return n
}
