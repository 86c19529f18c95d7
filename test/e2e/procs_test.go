package e2e

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

// freePort asks the kernel for a loopback port that is free right now.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// requireTool finds a Debian-packaged tool; CI must have it (the Makefile
// installs it), elsewhere the test skips saying how to get it.
func requireTool(t testing.TB, name string) string {
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

// startProcess runs a long-lived process for the test, logging to a file
// shown when the test fails. The returned stop interrupts it and waits for
// it to exit; it also runs at cleanup, and more calls do nothing.
func startProcess(t testing.TB, name string, args ...string) (stop func()) {
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
		logFile.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logFile.Name())
			t.Logf("%s log:\n%s", filepath.Base(name), b)
		}
	})
	return stop
}

// waitHTTP polls url until it answers 200 or the deadline passes.
func waitHTTP(t testing.TB, url string, within time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
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

var (
	buildMu  sync.Mutex
	built    = map[string]string{}
	buildDir string
)

// TestMain gives the binaries built by the tests one directory, removed at
// the end, so each binary is built once per run.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "gpuheal-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	buildDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// buildBinary builds a main package once per test run.
func buildBinary(t testing.TB, pkg, name string) string {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	if out, ok := built[pkg]; ok {
		return out
	}
	out := filepath.Join(buildDir, name)
	build := exec.Command("go", "build", "-o", out, pkg)
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", pkg, err, b)
	}
	built[pkg] = out
	return out
}

// startClusterAgent runs gpuheal-agent in cluster mode for node on the sim
// backend, following kernelLog with the short intervals tests need; extra
// flags are appended. It returns the stop function and the metrics URL.
func startClusterAgent(t testing.TB, node, kubeconfig, kernelLog, stateDir string, extra ...string) (stop func(), metricsURL string) {
	t.Helper()
	agentBin := buildBinary(t, "github.com/gpuheal/gpuheal/cmd/gpuheal-agent", "gpuheal-agent")
	port := freePort(t)
	args := append([]string{"--node-name=" + node, "--kubeconfig=" + kubeconfig, "--gpu-backend=sim",
		"--kmsg-path=" + kernelLog, "--kmsg-poll-interval=50ms", "--state-dir=" + stateDir,
		"--interval=1s", "--call-timeout=500ms", fmt.Sprintf("--metrics-address=127.0.0.1:%d", port)}, extra...)
	return startProcess(t, agentBin, args...), fmt.Sprintf("http://127.0.0.1:%d/metrics", port)
}

// pollUntil calls done every 50 ms until it reports true; the test fails
// with what when ctx ends first.
func pollUntil(ctx context.Context, t testing.TB, what string, done func() bool) {
	t.Helper()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !done() {
		select {
		case <-ctx.Done():
			t.Fatalf("gave up waiting: %s", what)
		case <-tick.C:
		}
	}
}
