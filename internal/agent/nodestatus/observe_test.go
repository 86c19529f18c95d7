package nodestatus

import (
	"context"
	"testing"
	"time"

	"github.com/gpuheal/gpuheal/internal/analyzer"
	"github.com/gpuheal/gpuheal/internal/testproc"
)

// TestObserveSyncSeesFailuresAndRecovery: the observer (the agent's
// readiness) sees each failed write while the API server is away and the
// success once it is back.
func TestObserveSyncSeesFailuresAndRecovery(t *testing.T) {
	p, api, clk := newTestConditions(t)
	seen := make(chan error, 16)
	p.ObserveSync(func(err error) { seen <- err })
	api.FailNext(2)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); p.Run(ctx) }()
	defer func() { cancel(); <-done }()

	p.Set([]analyzer.ConditionStatus{hardware(analyzer.StatusTrue, clk.Now())}, 8, 0)
	var got []bool // true: failed
	for len(got) == 0 || got[len(got)-1] {
		select {
		case err := <-seen:
			got = append(got, err != nil)
			if err != nil {
				testproc.EventuallyTrue(t, 10*time.Second, "the retry waiting on the clock", clk.HasWaiters)
				clk.Step(maxRetry * 2)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("outcomes so far %v; no more within 10s", got)
		}
	}
	if len(got) < 2 || !got[0] {
		t.Errorf("outcomes %v, want failures, then a success", got)
	}
}
