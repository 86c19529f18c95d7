package testproc

import (
	"context"
	"testing"
	"time"

	"github.com/gpuheal/gpuheal/internal/poll"
)

// Eventually fails the test unless cond holds within d; it is poll.Within
// for tests, so a test waits for what it needs and never sleeps.
func Eventually(t testing.TB, d time.Duration, what string, cond poll.Cond) {
	t.Helper()
	if err := poll.Within(context.Background(), d, what, cond); err != nil {
		t.Fatal(err)
	}
}

// EventuallyTrue is Eventually for a condition that cannot fail.
func EventuallyTrue(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	Eventually(t, d, what, func(context.Context) (bool, error) { return cond(), nil })
}

// Until fails the test unless cond holds before ctx ends: Eventually for
// a wait that shares one deadline with the rest of its test.
func Until(ctx context.Context, t testing.TB, what string, cond poll.Cond) {
	t.Helper()
	if err := poll.Until(ctx, what, 0, cond); err != nil {
		t.Fatal(err)
	}
}

// UntilTrue is Until for a condition that cannot fail.
func UntilTrue(ctx context.Context, t testing.TB, what string, cond func() bool) {
	t.Helper()
	Until(ctx, t, what, func(context.Context) (bool, error) { return cond(), nil })
}

// Consistently fails the test if cond stops holding at any check within
// d: the check that something does not happen during a window (a
// duplicate, a flap, a leak).
func Consistently(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	broke := func(context.Context) (bool, error) { return !cond(), nil }
	if err := poll.Within(context.Background(), d, "a break in "+what, broke); err == nil {
		t.Fatalf("%s stopped holding within %v", what, d)
	}
}
