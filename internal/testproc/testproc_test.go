package testproc

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuheal/gpuheal/internal/procs"
)

func TestStartCommandLogsAndStopsAtCleanup(t *testing.T) {
	var p *procs.Process
	t.Run("inner", func(t *testing.T) {
		p = StartCommand(t, procs.Command{Path: "/bin/sh", Args: []string{"-c", "echo started; while :; do sleep 0.05; done"}})
		EventuallyTrue(t, 10*time.Second, "the shell's first line", func() bool { return p.Tail(1) == "started" })
		if b, err := os.ReadFile(p.LogPath); err != nil || !strings.Contains(string(b), "started") {
			t.Errorf("log file %s: %q, %v", p.LogPath, b, err)
		}
	})
	select {
	case <-p.Done():
	default:
		t.Fatal("the process outlived its test")
	}
}

func TestWaitHTTPWaitsFor200(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if calls.Add(1) < 3 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	WaitHTTP(t, srv.URL, 10*time.Second)
	if calls.Load() < 3 {
		t.Errorf("answered after %d calls, want 3", calls.Load())
	}
}

func TestEventuallyUntilAndConsistently(t *testing.T) {
	n := 0
	EventuallyTrue(t, 10*time.Second, "the third check", func() bool { n++; return n >= 3 })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	UntilTrue(ctx, t, "the sixth check", func() bool { n++; return n >= 6 })
	checks := 0
	Consistently(t, 200*time.Millisecond, "a constant", func() bool { checks++; return true })
	if checks < 2 {
		t.Errorf("Consistently checked %d times in 200ms", checks)
	}
	var failed fatalRecorder
	func() {
		defer func() { _ = recover() }()
		Consistently(&failed, 10*time.Second, "the first two checks", func() bool { checks--; return checks > 0 })
	}()
	if !strings.Contains(failed.msg, "the first two checks stopped holding") {
		t.Errorf("Consistently of a breaking condition said %q", failed.msg)
	}
}

// fatalRecorder is a testing.TB whose Fatalf records and stops the caller.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}
func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	panic("fatal")
}
