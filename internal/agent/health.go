package agent

import (
	"context"
	"sync"

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
	// onResult receives every evaluation (condition publishing, metrics).
	onResult func(analyzer.Result)

	mu      sync.Mutex
	snap    *gpu.NodeSnapshot
	pending []finding.Finding
	wake    chan struct{}
}

func newHealthLoop(e *analyzer.Engine, onResult func(analyzer.Result)) *healthLoop {
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
		snap, findings := h.snap, h.pending
		h.pending = nil
		h.mu.Unlock()
		h.onResult(h.engine.Evaluate(snap, findings))
	}
}
