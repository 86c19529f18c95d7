// Package poll waits for a condition with a deadline: the one way tests,
// the end-to-end suites, the soak and the demo wait for something to
// happen. Nothing here sleeps a fixed time to let something happen; it
// checks, and checks again after Interval, until the condition holds or
// the context ends.
package poll

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Interval is how often Until checks by default: short enough that a
// test waits at most this long past the moment its condition holds.
const Interval = 50 * time.Millisecond

// Cond reports whether what is awaited holds. An error does not end the
// wait (an API server may be restarting); the last one is reported if the
// wait times out.
type Cond func(ctx context.Context) (bool, error)

// TimeoutError is what Until returns when ctx ends before cond holds.
type TimeoutError struct {
	What string
	// After is how long Until waited.
	After time.Duration
	// Last is the last error cond returned, nil if none.
	Last error
}

func (e *TimeoutError) Error() string {
	msg := fmt.Sprintf("gave up after %v waiting for %s", e.After.Round(time.Millisecond), e.What)
	if e.Last != nil {
		msg += " (last error: " + e.Last.Error() + ")"
	}
	return msg
}

func (e *TimeoutError) Unwrap() error { return e.Last }

// Until checks cond now and then every interval (Interval when 0) until
// it holds, and returns nil, or until ctx ends, and returns a
// *TimeoutError naming what.
func Until(ctx context.Context, what string, interval time.Duration, cond Cond) error {
	if interval <= 0 {
		interval = Interval
	}
	start := time.Now()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var last error
	for {
		ok, err := cond(ctx)
		if ok {
			return nil
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			return &TimeoutError{What: what, After: time.Since(start), Last: last}
		case <-tick.C:
		}
	}
}

// Within is Until with a deadline of d from now.
func Within(ctx context.Context, d time.Duration, what string, cond Cond) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return Until(ctx, what, 0, cond)
}

// IsTimeout reports whether err is a wait that ran out of time.
func IsTimeout(err error) bool {
	var te *TimeoutError
	return errors.As(err, &te)
}
