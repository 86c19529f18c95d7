package nodestatus

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"
)

// Retry delays of a failed sync: from 200 ms, doubling, to 5 s, each
// stretched by up to retryJitter. One small PATCH every 5 s costs an API
// server that is away nothing and bounds how late the state lands once it
// is back; the jitter spreads a fleet's agents, which all failed at the
// same moment of the outage, so they do not all come back in the same
// instant either.
const (
	minRetry    = 200 * time.Millisecond
	maxRetry    = 5 * time.Second
	retryJitter = 0.5
)

// newRetryBackoff is the backoff of one run of failures.
func newRetryBackoff() wait.Backoff {
	return wait.Backoff{Duration: minRetry, Factor: 2, Jitter: retryJitter, Steps: 1 << 30, Cap: maxRetry}
}

// retryLoop calls sync on every wake-up until ctx ends, retrying a failed
// sync after the next delay of newRetryBackoff (at most
// maxRetry*(1+retryJitter)).
func retryLoop(ctx context.Context, clk clock.Clock, wake <-chan struct{}, sync func(context.Context) error, failed func(err error, retryIn time.Duration)) {
	backoff := newRetryBackoff()
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
			d := backoff.Step()
			failed(err, d)
			retry = clk.After(d)
			continue
		}
		backoff = newRetryBackoff()
	}
}

// poke wakes a loop without ever blocking.
func poke(wake chan struct{}) {
	select {
	case wake <- struct{}{}:
	default:
	}
}
