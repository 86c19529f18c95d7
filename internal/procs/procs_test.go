package procs

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gpuheal/gpuheal/internal/poll"
)

// A shell stands in for our binaries: it starts in milliseconds and can
// trap signals and start children of its own.
const sh = "/bin/sh"

func TestLogFileArgsEnvDir(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "child.log")
	p, err := Command{Path: sh, Args: []string{"-c", `echo "$1 $PROCS_TEST $(pwd)"`, "sh", "hello"},
		Env: []string{"PROCS_TEST=from-env"}, Dir: dir, LogPath: log}.Start()
	if err != nil {
		t.Fatal(err)
	}
	<-p.Done()
	if p.Err() != nil || p.Name != "sh" {
		t.Fatalf("err %v, name %q", p.Err(), p.Name)
	}
	if want := "hello from-env " + dir; p.Tail(1) != want || Tail(log, 1) != want {
		t.Errorf("tail %q, file tail %q; want %q", p.Tail(1), Tail(log, 1), want)
	}
}

func TestOutputWriterAndTail(t *testing.T) {
	var out syncBuilder
	p, err := Command{Name: "counter", Path: sh, Args: []string{"-c", "for i in 1 2 3 4 5 6; do echo line$i; done; exit 3"},
		Output: &out}.Start()
	if err != nil {
		t.Fatal(err)
	}
	<-p.Done()
	if !strings.Contains(out.String(), "line1\n") {
		t.Errorf("writer got %q", out.String())
	}
	if got := p.Tail(2); got != "line5\nline6" {
		t.Errorf("Tail(2) = %q", got)
	}
	if msg := p.Exited(); !strings.Contains(msg, "counter exited (exit status 3)") || !strings.HasSuffix(msg, "line2\nline3\nline4\nline5\nline6") {
		t.Errorf("Exited() = %q", msg)
	}
}

// Stop ends the whole group, grandchildren included, with the stop signal.
func TestStopSignalsTheGroup(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "grandchild")
	// A background job of a non-interactive shell ignores SIGINT, so only
	// the kill after the leader ends can stop it.
	script := `sleep 60 & echo $! > ` + pidFile + `; trap 'echo got-int; exit 0' INT; echo ready; while :; do sleep 0.05; done`
	p, err := Command{Path: sh, Args: []string{"-c", script}, LogPath: filepath.Join(dir, "log"), StopSignal: syscall.SIGINT}.Start()
	if err != nil {
		t.Fatal(err)
	}
	var grandchild int
	waitFor(t, "the shell to start its child and set its trap", func() bool {
		b, _ := os.ReadFile(pidFile)
		grandchild, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return grandchild > 0 && strings.Contains(p.Tail(1), "ready")
	})
	if err := p.Stop(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.Tail(1), "got-int") {
		t.Errorf("the shell did not get SIGINT; log %q", p.Tail(5))
	}
	waitFor(t, "the shell's background sleep to end", func() bool { return gone(grandchild) })
}

func TestStopKillsAfterTimeout(t *testing.T) {
	p, err := Command{Path: sh, Args: []string{"-c", `trap '' TERM; echo ready; while :; do sleep 0.05; done`}, Output: &syncBuilder{}}.Start()
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the shell to ignore SIGTERM", func() bool { return p.Tail(1) == "ready" })
	start := time.Now()
	err = p.Stop(200 * time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("Stop = %v, want killed", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Stop took %v", d)
	}
	if p.Stop(time.Second) != nil {
		t.Error("a second Stop of an ended process failed")
	}
}

func TestStopAllInReverseAndStartError(t *testing.T) {
	var ps []*Process
	for range 3 {
		p, err := Command{Path: sh, Args: []string{"-c", "while :; do sleep 0.05; done"}, Output: &syncBuilder{}}.Start()
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	if err := StopAll(append(ps, nil), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		select {
		case <-p.Done():
		default:
			t.Errorf("pid %d still running", p.PID())
		}
	}
	if _, err := Start("missing", filepath.Join(t.TempDir(), "nope"), filepath.Join(t.TempDir(), "log")); err == nil ||
		!strings.Contains(err.Error(), "starting missing") {
		t.Errorf("Start of a missing binary: %v", err)
	}
}

func TestTailBufferKeepsTheEnd(t *testing.T) {
	b := newTailBuffer(8)
	for _, w := range []string{"0123", "456789", "ab", "cdefghijklmnopq", "rs"} {
		_, _ = b.Write([]byte(w))
	}
	if b.String() != "lmnopqrs" {
		t.Errorf("got %q", b.String())
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if err := poll.Within(context.Background(), 10*time.Second, what, func(context.Context) (bool, error) { return cond(), nil }); err != nil {
		t.Fatal(err)
	}
}

// gone reports whether pid has exited (a zombie runs nothing).
func gone(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	return err != nil || strings.Contains(string(b), ") Z ")
}

type syncBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuilder) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuilder) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
