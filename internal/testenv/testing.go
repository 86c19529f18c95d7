package testenv

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"testing"
)

// InCI reports whether we run under CI (CI=true), where a missing control
// plane is a failure rather than a skip.
func InCI() bool { return os.Getenv("CI") == "true" }

// ForTest starts an environment for t and stops it when t ends, whether the
// test passed, failed or was interrupted by SIGINT/SIGTERM. Without the
// binaries it fails under CI and skips elsewhere, saying how to build them.
func ForTest(t testing.TB, opts Options) *Env {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e, err := Start(ctx, opts)
	var missing *MissingBinariesError
	switch {
	case errors.As(err, &missing) && !InCI():
		t.Skipf("skipping: %v", err)
	case err != nil:
		t.Fatalf("starting test control plane: %v", err)
	}
	untrack := track(e)
	t.Cleanup(func() {
		untrack()
		if err := e.Stop(); err != nil {
			t.Errorf("stopping test control plane: %v", err)
		}
	})
	return e
}

var (
	liveMu  sync.Mutex
	live    = map[*Env]bool{}
	sigOnce sync.Once
)

// track registers e so that an interrupt stops it before the process exits;
// t.Cleanup does not run when the test binary is killed by a signal.
func track(e *Env) (untrack func()) {
	sigOnce.Do(func() {
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
		go func() {
			sig := <-ch
			liveMu.Lock()
			for env := range live {
				_ = env.Stop()
			}
			liveMu.Unlock()
			signal.Reset(sig)
			_ = syscall.Kill(os.Getpid(), sig.(syscall.Signal))
		}()
	})
	liveMu.Lock()
	live[e] = true
	liveMu.Unlock()
	return func() {
		liveMu.Lock()
		delete(live, e)
		liveMu.Unlock()
	}
}
