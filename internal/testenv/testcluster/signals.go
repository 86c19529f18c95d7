package testcluster

import (
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/gpuheal/gpuheal/internal/testenv"
)

var (
	liveMu  sync.Mutex
	live    = map[*testenv.Env]bool{}
	sigOnce sync.Once
)

// track registers e so that an interrupt stops it before the process exits;
// t.Cleanup does not run when the test binary is killed by a signal.
func track(e *testenv.Env) (untrack func()) {
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
