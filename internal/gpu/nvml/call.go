//go:build cgo

package nvml

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"k8s.io/utils/clock"

	"github.com/gpuheal/gpuheal/internal/gpu"
)

// guard remembers a call to one GPU (or to the node) that outlived its
// deadline. While that call is still inside the driver the GPU is not
// asked again: each new query would only strand another goroutine and OS
// thread on the same hung device.
type guard struct {
	mu    sync.Mutex
	call  string
	until <-chan struct{} // closed when the stuck call returns
}

// stuck reports the call still blocking, if any.
func (g *guard) stuck() (string, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.until == nil {
		return "", false
	}
	select {
	case <-g.until:
		g.call, g.until = "", nil
		return "", false
	default:
		return g.call, true
	}
}

func (g *guard) hold(call string, until <-chan struct{}) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.call, g.until = call, until
}

// session is one time-boxed read of one GPU (or of the node). Once a call
// times out or the GPU is lost, later calls are skipped: their answers
// would be timeouts or GPU_IS_LOST again.
type session struct {
	ctx      context.Context
	clock    clock.Clock
	perCall  time.Duration
	deadline time.Time
	guard    *guard

	errs    []gpu.QueryError
	lost    bool
	stopped bool
}

func newSession(ctx context.Context, c clock.Clock, perCall, budget time.Duration, g *guard) *session {
	return &session{ctx: ctx, clock: c, perCall: perCall, deadline: c.Now().Add(budget), guard: g}
}

func (s *session) fail(query, msg string, timeout bool) {
	s.errs = append(s.errs, gpu.QueryError{Query: query, Message: msg, Timeout: timeout})
}

// done is true when no more calls will be made in this session.
func (s *session) done() bool { return s.stopped || s.lost }

type outcome[T any] struct {
	v        T
	ret      nvml.Return
	panicked any
	hasPanic bool
}

// get runs fn under the session's deadline and reports whether v is
// usable. NOT_SUPPORTED and the quiet codes yield (zero, false) without
// an error, because "this GPU cannot tell" is an answer, not a failure.
func get[T any](s *session, query string, fn func() (T, nvml.Return), quiet ...nvml.Return) (T, bool) {
	v, ret, answered := call(s, query, fn)
	if !answered || !s.check(query, ret, quiet) {
		var zero T
		return zero, false
	}
	return v, true
}

// call runs fn in its own goroutine and waits at most until the per-call
// or the session deadline. answered is false when fn did not return a
// status (skipped, timed out, panicked); that is already recorded. A panic
// (a nil mock method, a driver bug surfacing in cgo glue) becomes a
// QueryError instead of taking the agent down.
func call[T any](s *session, query string, fn func() (T, nvml.Return)) (v T, ret nvml.Return, answered bool) {
	if s.done() {
		return v, ret, false
	}
	d := min(s.perCall, s.deadline.Sub(s.clock.Now()))
	if d <= 0 {
		s.stopped = true
		s.fail(query, "read budget used up before this call", true)
		return v, ret, false
	}
	out := make(chan outcome[T], 1)
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		defer func() {
			if p := recover(); p != nil {
				out <- outcome[T]{panicked: p, hasPanic: true}
			}
		}()
		v, ret := fn()
		out <- outcome[T]{v: v, ret: ret}
	}()
	timer := s.clock.NewTimer(d)
	defer timer.Stop()
	select {
	case o := <-out:
		if o.hasPanic {
			s.fail(query, fmt.Sprintf("panic: %v", o.panicked), false)
			return v, ret, false
		}
		return o.v, o.ret, true
	case <-timer.C():
		s.abandon(query, finished)
		s.fail(query, fmt.Sprintf("no answer within %v", d), true)
	case <-s.ctx.Done():
		s.abandon(query, finished)
		s.fail(query, "abandoned: "+s.ctx.Err().Error(), errors.Is(s.ctx.Err(), context.DeadlineExceeded))
	}
	return v, ret, false
}

// do is get for calls that return only a status.
func do(s *session, query string, fn func() nvml.Return, quiet ...nvml.Return) bool {
	_, ok := get(s, query, func() (struct{}, nvml.Return) { return struct{}{}, fn() }, quiet...)
	return ok
}

func (s *session) abandon(query string, finished <-chan struct{}) {
	s.stopped = true
	s.guard.hold(query, finished)
}

func (s *session) check(query string, ret nvml.Return, quiet []nvml.Return) bool {
	switch ret {
	case nvml.SUCCESS:
		return true
	case nvml.ERROR_NOT_SUPPORTED:
		return false
	case nvml.ERROR_GPU_IS_LOST:
		s.lost = true
	}
	for _, q := range quiet {
		if ret == q {
			return false
		}
	}
	s.fail(query, ret.Error(), ret == nvml.ERROR_TIMEOUT)
	return false
}
