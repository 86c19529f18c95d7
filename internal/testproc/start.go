package testproc

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/gpuheal/gpuheal/internal/procs"
)

// stopGrace is how long a test's process has to end after its stop
// signal before it is killed.
const stopGrace = 10 * time.Second

// Start runs a long-lived process for the test, logging to a file shown
// when the test fails. The returned stop interrupts it (SIGINT) and waits
// for it to exit; it also runs at cleanup, and more calls do nothing.
func Start(t testing.TB, name string, args ...string) (stop func()) {
	t.Helper()
	p := StartCommand(t, procs.Command{Path: name, Args: args, StopSignal: syscall.SIGINT})
	return func() { _ = p.Stop(stopGrace) }
}

// StartCommand starts c for the test and stops it at cleanup (c's stop
// signal, then a kill after 10 s). Its output goes to c.LogPath, or to a
// log file in the test's temporary directory, and is shown when the test
// fails.
func StartCommand(t testing.TB, c procs.Command) *procs.Process {
	t.Helper()
	if c.LogPath == "" {
		f, err := os.CreateTemp(t.TempDir(), filepath.Base(c.Path)+"-*.log")
		if err != nil {
			t.Fatal(err)
		}
		c.LogPath = f.Name()
		_ = f.Close()
	}
	p, err := c.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Stop(stopGrace); err != nil {
			t.Log(err)
		}
		if t.Failed() {
			b, _ := os.ReadFile(c.LogPath)
			t.Logf("%s log:\n%s", p.Name, b)
		}
	})
	return p
}

// WaitHTTP polls url until it answers 200 or the deadline passes.
func WaitHTTP(t testing.TB, url string, within time.Duration) {
	t.Helper()
	Eventually(t, within, url+" answering 200", func(ctx context.Context) (bool, error) {
		return answers200(ctx, url)
	})
}

func answers200(ctx context.Context, url string) (bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false, err
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("status %s", resp.Status)
	}
	return true, nil
}
