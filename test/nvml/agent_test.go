//go:build integration

package nvml

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
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
	// Build before the clock starts: under a loaded CI machine the first
	// build alone can take longer than the agent is given.
	agentBinary(t)
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
