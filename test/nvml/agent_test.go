package nvml

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gpuheal/gpuheal/internal/gpu"
)

// discovery is how the agent is to find the stand-in library.
type discovery int

const (
	viaLoaderPath discovery = iota // LD_LIBRARY_PATH, --driver-root left at /
	viaDriverRoot                  // --driver-root at a driver tree, LD_LIBRARY_PATH unset
)

// multiarchDir is where the agent looks first under a driver root.
func multiarchDir() string {
	if runtime.GOARCH == "arm64" {
		return "usr/lib/aarch64-linux-gnu"
	}
	return "usr/lib/x86_64-linux-gnu"
}

// driverTree lays lib out as a driver installs it: the versioned file and
// libnvidia-ml.so.1 as a relative link to it.
func driverTree(t *testing.T, lib string) string {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, multiarchDir())
	b, err := os.ReadFile(lib)
	if err == nil {
		err = os.MkdirAll(dir, 0o755)
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, "libnvidia-ml.so.550.90.07"), b, 0o755)
	}
	if err == nil {
		err = os.Symlink("libnvidia-ml.so.550.90.07", filepath.Join(dir, "libnvidia-ml.so.1"))
	}
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// agentCommand is gpuheal-agent on the nvml backend with nothing from the
// host: no kernel log, an empty host root (no /proc/driver/nvidia), and
// an environment without GPUHEAL_* or LD_LIBRARY_PATH but the test's.
func agentCommand(ctx context.Context, t *testing.T, lib, mode string, how discovery, args ...string) *exec.Cmd {
	t.Helper()
	base := []string{"--standalone", "--gpu-backend=nvml", "--kmsg-path=", "--state-dir=" + t.TempDir(),
		"--host-root=" + t.TempDir(), "--log-format=json"}
	env := []string{"GPUHEAL_NVML_STUB_MODE=" + mode}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GPUHEAL_") && !strings.HasPrefix(kv, "LD_LIBRARY_PATH=") {
			env = append(env, kv)
		}
	}
	switch how {
	case viaLoaderPath:
		env = append(env, "LD_LIBRARY_PATH="+filepath.Dir(lib))
	case viaDriverRoot:
		base = append(base, "--driver-root="+driverTree(t, lib))
	}
	cmd := exec.CommandContext(ctx, agentBinary(t), append(base, args...)...)
	cmd.Env = env
	// The agent must not outlive a test binary that is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd
}

// onceResult is what `gpuheal-agent --once -o json` left behind.
type onceResult struct {
	snap   *gpu.NodeSnapshot // nil unless it exited 0 with a snapshot
	code   int
	stderr string
}

func runOnce(t *testing.T, lib, mode string, how discovery, args ...string) onceResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := agentCommand(ctx, t, lib, mode, how, append([]string{"--once", "-o", "json"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := onceResult{stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
	case err != nil:
		t.Fatalf("running gpuheal-agent: %v\nstderr:\n%s", err, r.stderr)
	}
	if r.code == 0 {
		r.snap = &gpu.NodeSnapshot{}
		if err := json.Unmarshal(stdout.Bytes(), r.snap); err != nil {
			t.Fatalf("gpuheal-agent exited 0 without a JSON snapshot: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), r.stderr)
		}
	}
	return r
}

// daemon is a running gpuheal-agent serving metrics.
type daemon struct {
	metricsURL string
	stderr     *syncBuffer
}

// startDaemon runs the agent until the test ends, with metrics on a port
// the kernel picks; the address comes from its "serving metrics" log.
func startDaemon(t *testing.T, lib, mode string, how discovery) *daemon {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := agentCommand(ctx, t, lib, mode, how, "--interval=1s", "--call-timeout=500ms", "--metrics-address=127.0.0.1:0")
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 15 * time.Second
	pr, pw := io.Pipe()
	d := &daemon{stderr: &syncBuffer{}}
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			d.stderr.WriteLine(sc.Text())
			var rec struct{ Msg, Address string }
			if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Msg == "serving metrics" {
				select {
				case addr <- rec.Address:
				default:
				}
			}
		}
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait(); _ = pw.Close() }()
	t.Cleanup(func() {
		cancel()
		// A clean stop (exit 0 on SIGTERM) means Close freed the event
		// set and shut NVML down through the library.
		// Wait reports the canceled context even then, so ask the state.
		err := <-exited
		if st := cmd.ProcessState; st == nil || !st.Success() {
			t.Errorf("gpuheal-agent did not stop cleanly on SIGTERM: %v (%v)\nstderr:\n%s", st, err, d.stderr)
		}
	})
	select {
	case a := <-addr:
		d.metricsURL = "http://" + a + "/metrics"
	case err := <-exited:
		exited <- err
		t.Fatalf("gpuheal-agent exited before serving metrics: %v\nstderr:\n%s", err, d.stderr)
	case <-time.After(time.Minute):
		t.Fatalf("gpuheal-agent did not serve metrics within a minute\nstderr:\n%s", d.stderr)
	}
	return d
}

// waitSeries polls the metrics until a line starts with series (name and
// labels as the exporter writes them: sorted), failing at the deadline.
func (d *daemon) waitSeries(t *testing.T, series string, deadline time.Duration) string {
	t.Helper()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	timeout := time.After(deadline)
	var last string
	for {
		if resp, err := http.Get(d.metricsURL); err == nil {
			b, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			last = string(b)
			for _, line := range strings.Split(last, "\n") {
				if strings.HasPrefix(line, series) {
					return line
				}
			}
		}
		select {
		case <-tick.C:
		case <-timeout:
			t.Fatalf("no series %s within %v\nlast scrape (gpuheal_ lines):\n%s\nstderr:\n%s", series, deadline, gpuhealLines(last), d.stderr)
		}
	}
}

func gpuhealLines(text string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "gpuheal_problem") || strings.HasPrefix(l, "gpuheal_gpu_xid") || strings.HasPrefix(l, "gpuheal_gpu_missing") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// syncBuffer collects stderr lines for failure messages.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) WriteLine(l string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b.WriteString(l + "\n")
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
