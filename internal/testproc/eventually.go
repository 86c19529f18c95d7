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
