package nodestatus

import (
	"context"
	"errors"
	"testing"
	"time"

	testclock "k8s.io/utils/clock/testing"

	"github.com/gpuheal/gpuheal/internal/testproc"
)

// retryDelays runs retryLoop against a sync that always fails and returns
// the first n delays it chose, stepping a fake clock through them.
func retryDelays(t *testing.T, n int) []time.Duration {
	t.Helper()
	clk := testclock.NewFakeClock(time.Now())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	delays := make(chan time.Duration, 1)
	wake := make(chan struct{}, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		retryLoop(ctx, clk, wake, func(context.Context) error { return errors.New("API server away") },
			func(_ error, in time.Duration) { delays <- in })
	}()
	poke(wake)
	var out []time.Duration
	for range n {
		select {
		case d := <-delays:
			out = append(out, d)
			testproc.EventuallyTrue(t, 10*time.Second, "the retry loop waiting on the clock", clk.HasWaiters)
			clk.Step(d)
		case <-time.After(10 * time.Second):
			t.Fatal("no retry within 10s")
		}
	}
	cancel()
	<-done
	return out
}

func TestRetryDelaysAreJitteredAndBounded(t *testing.T) {
	const n = 12
	a, b := retryDelays(t, n), retryDelays(t, n)
	same := 0
	base := minRetry
	for i := range n {
		for _, d := range []time.Duration{a[i], b[i]} {
			hi := time.Duration(float64(base) * (1 + retryJitter))
			if d < base || d > hi {
				t.Errorf("delay %d = %v, want within [%v, %v]", i+1, d, base, hi)
			}
		}
		if a[i] == b[i] {
			same++
		}
		base = min(2*base, maxRetry)
	}
	// Two agents that failed together must not retry in step.
	if same > 0 {
		t.Errorf("%d of %d delays equal in two runs (%v and %v): not jittered", same, n, a, b)
	}
	if last := a[n-1]; last > time.Duration(float64(maxRetry)*(1+retryJitter)) {
		t.Errorf("delay grew to %v, beyond the bound", last)
	}
}
