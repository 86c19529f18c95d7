// Package testproc runs the outside processes tests use (Prometheus, our
// own binaries) and finds the Debian-packaged tools they need. Test code
// only: it calls testing.TB.
package testproc

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// FreePort asks the kernel for a loopback port that is free right now.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}

// RequireTool finds a Debian-packaged tool; CI must have it (the Makefile
// installs it), elsewhere the test skips saying how to get it.
func RequireTool(t testing.TB, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	msg := fmt.Sprintf("%s not installed; `make deps` installs it (hack/ensure-deps.sh)", name)
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// Start runs a long-lived process for the test, logging to a file
// shown when the test fails. The returned stop interrupts it and waits for
// it to exit; it also runs at cleanup, and more calls do nothing.
func Start(t testing.TB, name string, args ...string) (stop func()) {
	t.Helper()
	logFile, err := os.CreateTemp(t.TempDir(), filepath.Base(name)+"-*.log")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			_ = cmd.Process.Signal(os.Interrupt)
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				_ = cmd.Process.Kill()
				<-done
			}
		})
	}
	t.Cleanup(func() {
		stop()
		_ = logFile.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logFile.Name())
			t.Logf("%s log:\n%s", filepath.Base(name), b)
		}
	})
	return stop
}

// WaitHTTP polls url until it answers 200 or the deadline passes.
func WaitHTTP(t testing.TB, url string, within time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		resp, err := http.Get(url)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s not answering 200 within %v (last error %v)", url, within, err)
		case <-tick.C:
		}
	}
}
