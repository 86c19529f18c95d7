//go:build integration

package nvml

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/testenv"
	"github.com/gpuheal/gpuheal/internal/testenv/testcluster"
	"github.com/gpuheal/gpuheal/internal/testproc"
)

// brokenDriverFor is the driver-unavailable rule's duration in this test
// (the default rule's is 1m, for the same expression).
const brokenDriverFor = 3 * time.Second

// A node that should have GPUs (a p5.48xlarge with nvidia.com/gpu
// capacity) whose driver root holds no libnvidia-ml: the agent keeps
// running, the Node's GPU condition goes False with
// NvidiaDriverUnavailable within the rule's duration, and once the
// library appears the agent's backoff opens it and the condition goes
// True. It never exits on its own, and stops cleanly on SIGTERM.
func TestBrokenDriverIsAConditionNotACrash(t *testing.T) {
	lib := stubLibraries(t).full
	agentBinary(t) // built before the clock starts
	env := testcluster.Start(t, testenv.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	names, err := testenv.CreateGPUNodes(ctx, env.Client, "broken", 1)
	if err != nil {
		t.Fatal(err)
	}
	node := names[0]

	rules := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(rules, fmt.Appendf(nil, `rules:
- name: driver-unavailable
  scope: node
  expr: "!node.available"
  for: %s
  severity: fatal
  condition: %s
  reason: NvidiaDriverUnavailable
  message: "the GPUs cannot be read: NVML or the NVIDIA driver is unavailable"
  action: reboot
`, brokenDriverFor, v1alpha1.ConditionGPUHealAcceleratorHealthy), 0o644); err != nil {
		t.Fatal(err)
	}
	driverRoot := t.TempDir() // no library yet
	start := time.Now()
	agent := startClusterAgent(t, "--node-name="+node, "--kubeconfig="+env.Kubeconfig,
		"--driver-root="+driverRoot, "--config="+rules)

	cond := func(want corev1.ConditionStatus, reason string) func(context.Context) (bool, error) {
		return func(ctx context.Context) (bool, error) {
			if err := agent.exitedErr(); err != nil {
				return false, err
			}
			var n corev1.Node
			if err := env.Client.Get(ctx, client.ObjectKey{Name: node}, &n); err != nil {
				return false, err
			}
			for _, c := range n.Status.Conditions {
				if c.Type == v1alpha1.ConditionGPUHealAcceleratorHealthy {
					if c.Status == want && (reason == "" || c.Reason == reason) {
						return true, nil
					}
					return false, fmt.Errorf("condition %s=%s (%s: %s)\nagent stderr:\n%s", c.Type, c.Status, c.Reason, c.Message, agent.stderr)
				}
			}
			return false, fmt.Errorf("no %s condition yet\nagent stderr:\n%s", v1alpha1.ConditionGPUHealAcceleratorHealthy, agent.stderr)
		}
	}
	// The rule's duration, a few collections and the publisher's write.
	testproc.Eventually(t, brokenDriverFor+20*time.Second, "the driver-unavailable condition",
		cond(corev1.ConditionFalse, "NvidiaDriverUnavailable"))
	t.Logf("driver-unavailable condition on the Node %v after the agent started", time.Since(start).Round(100*time.Millisecond))

	// The driver comes back: lay the library out as a driver install does.
	dir := filepath.Join(driverRoot, multiarchDir())
	b, err := os.ReadFile(lib)
	if err == nil {
		err = os.MkdirAll(dir, 0o755)
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, "libnvidia-ml.so.1"), b, 0o755)
	}
	if err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	// Retries 5 s, 10 s, 20 s, 40 s (±20 %) after the first failure.
	testproc.Eventually(t, 90*time.Second, "the GPU condition True once the library is there",
		cond(corev1.ConditionTrue, ""))
	t.Logf("condition True %v after the library appeared", time.Since(back).Round(100*time.Millisecond))
}

// clusterAgent is a gpuheal-agent on the nvml backend writing its Node.
type clusterAgent struct {
	stderr *syncBuffer
	exited chan error
}

// exitedErr is non-nil once the agent has exited: it must not.
func (a *clusterAgent) exitedErr() error {
	select {
	case err := <-a.exited:
		a.exited <- err
		return fmt.Errorf("gpuheal-agent exited: %w\nstderr:\n%s", err, a.stderr)
	default:
		return nil
	}
}

// startClusterAgent runs the agent inside "the cluster" (no --standalone)
// until the test ends, with nothing from the host and no LD_LIBRARY_PATH:
// the library is found only under --driver-root, if at all.
func startClusterAgent(t *testing.T, args ...string) *clusterAgent {
	t.Helper()
	return startClusterAgentEnv(t, nil, args...)
}

// startClusterAgentEnv is startClusterAgent with env (KEY=value, e.g.
// the stand-in library's GPUHEAL_NVML_STUB_MODE) added.
func startClusterAgentEnv(t *testing.T, env []string, args ...string) *clusterAgent {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	base := []string{"--gpu-backend=nvml", "--kmsg-path=", "--state-dir=" + t.TempDir(), "--host-root=" + t.TempDir(),
		"--log-format=json", "--interval=1s", "--call-timeout=500ms", "--metrics-address=127.0.0.1:0", "--predictor=off"}
	cmd := exec.CommandContext(ctx, agentBinary(t), append(base, args...)...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GPUHEAL_") && !strings.HasPrefix(kv, "LD_LIBRARY_PATH=") && !strings.HasPrefix(kv, "KUBECONFIG=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 15 * time.Second
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	a := &clusterAgent{stderr: &syncBuffer{}, exited: make(chan error, 1)}
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			a.stderr.WriteLine(sc.Text())
		}
	}()
	go func() { a.exited <- cmd.Wait(); _ = pw.Close() }()
	t.Cleanup(func() {
		if err := a.exitedErr(); err != nil {
			t.Error(err)
			cancel()
			return
		}
		cancel()
		<-a.exited
		if st := cmd.ProcessState; st == nil || !st.Success() {
			t.Errorf("gpuheal-agent did not stop cleanly on SIGTERM: %v\nstderr:\n%s", st, a.stderr)
		}
	})
	return a
}
