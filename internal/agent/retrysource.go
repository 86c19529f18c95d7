package agent

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/gpuheal/gpuheal/internal/gpu"
)

// Backoff of reopening a GPU backend that failed to open: the first retry
// 5 s after the failure, doubling up to 5 minutes, each delay drawn within
// ±20 % so that a fleet whose driver broke at once (a bad driver rollout)
// does not retry in step.
const (
	reopenInitial = 5 * time.Second
	reopenMax     = 5 * time.Minute
	reopenJitter  = 0.2
)

// retryingSource stands in for a GPU backend that could not be opened on a
// node known to have GPUs (a broken or missing driver, libnvidia-ml not
// loadable). Until an attempt succeeds every Snapshot fails, which the
// analyzer reads as the driver being unavailable (the driver-unavailable
// rule), and the agent keeps publishing that instead of exiting into a
// crash loop. Attempts run in the background, started by Snapshot when
// the backoff allows, because opening NVML can take as long as nvmlInit's
// time box and must not stall a collection.
type retryingSource struct {
	name  string
	open  func() (gpu.Source, error)
	why   string // how the node is known to have GPUs
	clock clock.Clock
	// rand is in [0,1); spawn runs an attempt (tests run it inline).
	rand  func() float64
	spawn func(func())

	mu       sync.Mutex
	src      gpu.Source
	lastErr  error
	failures int
	next     time.Time
	opening  bool
	closed   bool
}

func newRetryingSource(name, why string, firstErr error, open func() (gpu.Source, error), clk clock.Clock) *retryingSource {
	r := &retryingSource{name: name, why: why, open: open, clock: clk, rand: rand.Float64,
		spawn: func(f func()) { go f() }}
	r.failedLocked(firstErr)
	return r
}

// delay is the wait after the n-th failure in a row (n ≥ 1).
func (r *retryingSource) delay(n int) time.Duration {
	d := reopenInitial
	for i := 1; i < n && d < reopenMax; i++ {
		d *= 2
	}
	d = min(d, reopenMax)
	return time.Duration(float64(d) * (1 + reopenJitter*(2*r.rand()-1)))
}

func (r *retryingSource) failedLocked(err error) {
	r.failures++
	r.lastErr = err
	r.next = r.clock.Now().Add(r.delay(r.failures))
}

// Name is the open backend's name, or the one asked for until then.
func (r *retryingSource) Name() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.src != nil {
		return r.src.Name()
	}
	return r.name
}

// Snapshot reads through the backend once it is open; until then it
// starts an attempt when one is due and reports why there is no snapshot.
func (r *retryingSource) Snapshot(ctx context.Context) (*gpu.NodeSnapshot, error) {
	r.mu.Lock()
	start := r.src == nil && !r.closed && !r.opening && !r.clock.Now().Before(r.next)
	r.opening = r.opening || start
	r.mu.Unlock()
	if start {
		r.spawn(r.attempt)
	}
	r.mu.Lock()
	src := r.src
	err := fmt.Errorf("GPU backend %s not open after %d attempts, next in %s (the node has GPUs: %s): %w",
		r.name, r.failures, r.next.Sub(r.clock.Now()).Round(time.Second), r.why, r.lastErr)
	if r.closed && src == nil {
		err = errors.New("GPU backend is closed")
	}
	r.mu.Unlock()
	if src != nil {
		return src.Snapshot(ctx)
	}
	return nil, err
}

func (r *retryingSource) attempt() {
	src, err := r.open()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.opening = false
	switch {
	case err != nil:
		r.failedLocked(err)
	case r.closed:
		// Closed while opening: nobody will close it otherwise.
		_ = src.Close()
	default:
		r.src = src
	}
}

// Close closes the backend if it was opened; an attempt still running
// closes what it opens.
func (r *retryingSource) Close() error {
	r.mu.Lock()
	r.closed = true
	src := r.src
	r.mu.Unlock()
	if src != nil {
		return src.Close()
	}
	return nil
}
