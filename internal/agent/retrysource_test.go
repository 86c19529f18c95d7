package agent

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/gpuheal/gpuheal/internal/gpu"
	"github.com/gpuheal/gpuheal/internal/gpu/sim"
)

// fakeOpener fails until told to succeed, counting attempts.
type fakeOpener struct {
	attempts int
	ok       bool
	t        *testing.T
}

func (f *fakeOpener) open() (gpu.Source, error) {
	f.attempts++
	if !f.ok {
		return nil, errors.New("no NVIDIA GPU found: nvml: libnvidia-ml.so.1 not found")
	}
	n, err := sim.New(sim.Options{NodeName: "n1", GPUs: 2})
	if err != nil {
		f.t.Fatal(err)
	}
	return n, nil
}

func newTestRetrying(clk *clocktesting.FakeClock, f *fakeOpener, jitter float64) *retryingSource {
	r := newRetryingSource("nvml", "node n1 capacity nvidia.com/gpu", errors.New("first failure"), f.open, clk)
	r.rand = func() float64 { return jitter }
	r.spawn = func(fn func()) { fn() }
	// The first delay was drawn with the real rand; redraw it.
	r.next = clk.Now().Add(r.delay(1))
	return r
}

// A backend that failed to open is retried only when the backoff allows,
// with delays doubling to the cap; each Snapshot until then fails and
// says why; once an attempt succeeds the snapshots are the backend's.
func TestRetryingSourceBacksOffThenOpens(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC))
	f := &fakeOpener{t: t}
	r := newTestRetrying(clk, f, 0.5) // 0.5: no jitter
	ctx := context.Background()

	_, err := r.Snapshot(ctx)
	if err == nil || f.attempts != 0 {
		t.Fatalf("before the first delay: err %v, %d attempts; want a failure and no attempt", err, f.attempts)
	}
	for _, part := range []string{"nvml", "first failure", "node n1 capacity nvidia.com/gpu"} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("error %q does not say %q", err, part)
		}
	}
	// Delays after the 1st…8th failure: 5s, 10s, 20s, … capped at 5m.
	want := []time.Duration{5 * time.Second, 10 * time.Second, 20 * time.Second, 40 * time.Second,
		80 * time.Second, 160 * time.Second, 5 * time.Minute, 5 * time.Minute}
	for i, d := range want {
		clk.Step(d - time.Millisecond)
		if _, err := r.Snapshot(ctx); err == nil || f.attempts != i {
			t.Fatalf("%v after failure %d: %d attempts, want %d", d-time.Millisecond, i+1, f.attempts, i)
		}
		clk.Step(time.Millisecond)
		if _, err := r.Snapshot(ctx); err == nil || f.attempts != i+1 {
			t.Fatalf("%v after failure %d: %d attempts, want %d", d, i+1, f.attempts, i+1)
		}
	}
	f.ok = true
	clk.Step(reopenMax)
	snap, err := r.Snapshot(ctx)
	if err != nil || snap == nil || snap.FoundGPUs != 2 {
		t.Fatalf("after a successful attempt: %v, %v; want the sim's 2 GPUs", snap, err)
	}
	if r.Name() != "sim" {
		t.Errorf("Name = %q once open, want the backend's", r.Name())
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
}

// The jitter keeps each delay within ±20 % of the base, also at the cap.
func TestRetryingSourceJitter(t *testing.T) {
	r := &retryingSource{}
	for _, tc := range []struct {
		n      int
		rand   float64
		lo, hi time.Duration
	}{
		{1, 0, 4 * time.Second, 4 * time.Second},
		{1, 0.999999, 5990 * time.Millisecond, 6 * time.Second},
		{20, 0, 4 * time.Minute, 4 * time.Minute},
		{20, 0.999999, 5*time.Minute + 59*time.Second, 6 * time.Minute},
		{1000, 0.5, reopenMax, reopenMax},
	} {
		r.rand = func() float64 { return tc.rand }
		if d := r.delay(tc.n); d < tc.lo || d > tc.hi {
			t.Errorf("delay(%d) with rand %v = %v, want within [%v, %v]", tc.n, tc.rand, d, tc.lo, tc.hi)
		}
	}
}

// Closing while an attempt is running closes what the attempt opens.
func TestRetryingSourceClosedWhileOpening(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	f := &fakeOpener{t: t, ok: true}
	r := newTestRetrying(clk, f, 0.5)
	var pending func()
	r.spawn = func(fn func()) { pending = fn }
	clk.Step(reopenInitial)
	if _, err := r.Snapshot(context.Background()); err == nil || pending == nil {
		t.Fatalf("Snapshot: %v, attempt started %v", err, pending != nil)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	pending()
	if r.src != nil {
		t.Error("an attempt that finished after Close kept its backend")
	}
	if _, err := r.Snapshot(context.Background()); err == nil {
		t.Error("Snapshot after Close succeeded")
	}
}
