package poll

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestUntilReturnsOnceTheConditionHolds(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	err := Until(context.Background(), "third call", time.Millisecond, func(context.Context) (bool, error) {
		return calls.Add(1) == 3, nil
	})
	if err != nil {
		t.Fatalf("Until: %v", err)
	}
	if got := calls.Load(); got != 3 {
		t.Fatalf("cond called %d times, want 3", got)
	}
}

func TestUntilNamesWhatAndTheLastErrorOnTimeout(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	var calls atomic.Int32
	boom := errors.New("connection refused")
	err := Until(ctx, "node gpu-0 Ready", time.Millisecond, func(context.Context) (bool, error) {
		if calls.Add(1) == 2 {
			cancel()
		}
		return false, boom
	})
	if !IsTimeout(err) {
		t.Fatalf("err = %v, want a timeout", err)
	}
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want it to wrap the last error", err)
	}
	for _, want := range []string{"node gpu-0 Ready", "connection refused"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}

func TestWithinEndsAtItsDeadline(t *testing.T) {
	t.Parallel()
	err := Within(context.Background(), 20*time.Millisecond, "never", func(context.Context) (bool, error) {
		return false, nil
	})
	if !IsTimeout(err) {
		t.Fatalf("err = %v, want a timeout", err)
	}
}
