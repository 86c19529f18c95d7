//go:build integration

package e2e

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuheal/gpuheal/internal/testenv"
	"github.com/gpuheal/gpuheal/internal/testproc"
)

// The process helpers are shared with other packages' tests.
var (
	freePort     = testproc.FreePort
	requireTool  = testproc.RequireTool
	startProcess = testproc.Start
	waitHTTP     = testproc.WaitHTTP
	tail         = testproc.Tail
)

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
	if err := testenv.GoBuild(out, pkg); err != nil {
		t.Fatal(err)
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

// startControllerBinary runs gpuheal-controller as shipped, without leader
// election and with the kwok and none providers, until the test ends;
// extra flags are appended. It returns once the controller is ready, with
// the port of its metrics (and audit API) server.
func startControllerBinary(t testing.TB, kubeconfig string, extra ...string) (metricsPort int) {
	t.Helper()
	bin := buildBinary(t, "github.com/gpuheal/gpuheal/cmd/gpuheal-controller", "gpuheal-controller")
	metricsPort, healthPort := freePort(t), freePort(t)
	args := append([]string{"--kubeconfig=" + kubeconfig, "--leader-elect=false", "--providers=kwok,none",
		fmt.Sprintf("--metrics-address=127.0.0.1:%d", metricsPort), fmt.Sprintf("--health-address=127.0.0.1:%d", healthPort),
		"--metrics-secure=false"}, extra...)
	startProcess(t, bin, args...)
	waitHTTP(t, fmt.Sprintf("http://127.0.0.1:%d/readyz", healthPort), time.Minute)
	return metricsPort
}

// lineLog keeps a process's output by lines and hands the first line
// that match accepts to found.
type lineLog struct {
	mu      sync.Mutex
	partial []byte
	lines   []string
	match   func(line string) bool
	found   chan string
}

func (l *lineLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.partial = append(l.partial, p...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := string(l.partial[:i])
		l.partial = l.partial[i+1:]
		l.lines = append(l.lines, line)
		if l.match(line) {
			select {
			case l.found <- line:
			default:
			}
		}
	}
}

func (l *lineLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}
