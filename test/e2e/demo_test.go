package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestDemo runs `gpuheal demo` as a newcomer would (small and fast): a
// fault is detected, its node repaired and the time to recover printed;
// the status page answers; Ctrl-C stops everything and leaves no process
// behind.
func TestDemo(t *testing.T) {
	binDir := requireControlPlane(t)
	requireWorkloadControllers(t, binDir)
	buildBinary(t, "github.com/gpuheal/gpuheal/cmd/gpuheal-agent", "gpuheal-agent")
	buildBinary(t, "github.com/gpuheal/gpuheal/cmd/gpuheal-controller", "gpuheal-controller")
	gpuheal := buildBinary(t, "github.com/gpuheal/gpuheal/cmd/gpuheal", "gpuheal")
	workDir := t.TempDir()
	controller := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	cmd := exec.Command(gpuheal, "demo", "--nodes=8", "--speed=8", "--seed=3", "--bin-dir="+binDir,
		"--work-dir="+workDir, "--controller-address="+controller, fmt.Sprintf("--agent-address=127.0.0.1:%d", freePort(t)))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	var out lockedLines
	recovered := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			out.add(line)
			if strings.Contains(line, "RECOVERED in") {
				select {
				case recovered <- line:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
		done <- cmd.Wait()
	}()
	defer func() {
		if t.Failed() {
			t.Logf("demo output:\n%s\nstderr:\n%s", out.String(), stderr.String())
			for _, f := range []string{"gpuheal-controller.log", "gpuheal-agent.log"} {
				b, _ := os.ReadFile(filepath.Join(workDir, f))
				t.Logf("%s (last 3000 bytes):\n%s", f, tail(b, 3000))
			}
		}
	}()

	select {
	case line := <-recovered:
		t.Logf("first recovery: %s", line)
	case err := <-done:
		t.Fatalf("demo exited before any recovery: %v", err)
	case <-time.After(4 * time.Minute):
		_ = cmd.Process.Kill()
		t.Fatal("no incident recovered within 4 minutes")
	}
	for _, want := range []string{"DETECTED AcceleratedHardwareReady=False", "cordoned", "drained"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("demo output lacks %q", want)
		}
	}
	waitHTTP(t, "http://"+controller+"/status/api/fleet", 10*time.Second)

	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("demo exit after Ctrl-C: %v", err)
		}
	case <-time.After(90 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("demo did not stop within 90s of Ctrl-C")
	}
	// Every process the demo started had the work directory in its
	// arguments (kubeconfig, logs); none may be left.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	pollUntil(ctx, t, "no process left with "+workDir+" in its command line", func() bool {
		return len(processesMentioning(workDir)) == 0
	})
}

func requireWorkloadControllers(t *testing.T, binDir string) {
	t.Helper()
	for _, b := range []string{"kube-controller-manager", "kube-scheduler"} {
		if _, err := os.Stat(filepath.Join(binDir, b)); err != nil {
			msg := b + " missing from " + binDir + "; `make controlplane` builds it"
			if os.Getenv("CI") == "true" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}
}

// processesMentioning lists live processes whose command line contains s.
func processesMentioning(s string) []string {
	entries, _ := os.ReadDir("/proc")
	var found []string
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(b), s) {
			continue
		}
		if st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil && strings.Contains(string(st), ") Z ") {
			continue // a zombie waits for its parent; it runs nothing
		}
		found = append(found, e.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
	}
	return found
}

type lockedLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *lockedLines) add(s string) { l.mu.Lock(); l.lines = append(l.lines, s); l.mu.Unlock() }
func (l *lockedLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

func tail(b []byte, n int) []byte { return b[max(len(b)-n, 0):] }
