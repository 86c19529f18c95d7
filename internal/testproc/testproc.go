// Package testproc is what tests use around outside processes: it runs
// them through internal/procs for the length of a test, finds the
// Debian-packaged tools they need, and waits for things with a deadline
// (Eventually, WaitHTTP). Test code only: it calls testing.TB, which is
// why it is not part of procs, which the demo and the soak link.
package testproc

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"testing"

	"github.com/gpuheal/gpuheal/internal/procs"
)

// InCI reports whether we run under CI (CI=true), where a missing tool or
// control plane is a failure rather than a skip.
func InCI() bool { return os.Getenv("CI") == "true" }

// FreePort returns a loopback port that is free right now, for a process
// the test starts later (procs.FreeLoopbackAddr says why it is not one the
// kernel picks).
func FreePort(t testing.TB) int {
	t.Helper()
	addr, err := procs.FreeLoopbackAddr()
	if err != nil {
		t.Fatal(err)
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	return n
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
	if InCI() {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// Tail is the last n bytes of b: the end of a process's log for a failure
// message.
func Tail(b []byte, n int) []byte { return b[max(len(b)-n, 0):] }
