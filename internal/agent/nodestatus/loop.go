package nodestatus

import (
	"context"
	"time"

	"k8s.io/utils/clock"
)

// retryLoop calls sync on every wake-up until ctx ends, retrying a failed
// sync with backoff from 200 ms to 5 s: one small PATCH every 5 s costs an
// API server that is away nothing, and bounds how late the state lands
// once it is back.
func retryLoop(ctx context.Context, clk clock.Clock, wake <-chan struct{}, sync func(context.Context) error, failed func(err error, retryIn time.Duration)) {
	const minBackoff, maxBackoff = 200 * time.Millisecond, 5 * time.Second
	backoff := minBackoff
	var retry <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-wake:
		case <-retry:
		}
		retry = nil
		if err := sync(ctx); err != nil {
			failed(err, backoff)
			retry = clk.After(backoff)
			backoff = min(2*backoff, maxBackoff)
			continue
		}
		backoff = minBackoff
	}
}

// poke wakes a loop without ever blocking.
func poke(wake chan struct{}) {
	select {
	case wake <- struct{}{}:
	default:
	}
}
