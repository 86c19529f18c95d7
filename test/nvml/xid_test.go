//go:build integration

package nvml

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/testenv"
	"github.com/gpuheal/gpuheal/internal/testenv/testcluster"
	"github.com/gpuheal/gpuheal/internal/testproc"
)

// An Xid 79 that only NVML's event set reports — the agent runs with no
// kernel log at all (--kmsg-path=), as on a node whose /dev/kmsg cannot
// be read — makes the real API server's Node unhealthy: the agent binary
// loads the stand-in libnvidia-ml (xid mode: the first event wait
// delivers Xid 79 on GPU 5) from its driver root, and the Node's GPU
// condition goes False with NvidiaXID79Error, naming GPU 5.
func TestNVMLOnlyXid79MakesTheNodeUnhealthy(t *testing.T) {
	lib := stubLibraries(t).full
	agentBinary(t) // built before the clock starts
	env := testcluster.Start(t, testenv.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	names, err := testenv.CreateGPUNodes(ctx, env.Client, "nvml-xid", 1)
	if err != nil {
		t.Fatal(err)
	}
	node := names[0]
	agent := startClusterAgentEnv(t, []string{"GPUHEAL_NVML_STUB_MODE=xid"},
		"--node-name="+node, "--kubeconfig="+env.Kubeconfig, "--driver-root="+driverTree(t, lib))

	testproc.Eventually(t, time.Minute, "the GPU condition False from NVML's Xid 79", func(ctx context.Context) (bool, error) {
		if err := agent.exitedErr(); err != nil {
			return false, err
		}
		var n corev1.Node
		if err := env.Client.Get(ctx, client.ObjectKey{Name: node}, &n); err != nil {
			return false, err
		}
		for _, c := range n.Status.Conditions {
			if c.Type != v1alpha1.ConditionGPUHealAcceleratorHealthy {
				continue
			}
			if c.Status == corev1.ConditionFalse && c.Reason == "NvidiaXID79Error" {
				if want := fmt.Sprintf("GPU %d ", xidGPU); !strings.Contains(c.Message, want) {
					return false, fmt.Errorf("condition message %q does not name %q", c.Message, want)
				}
				return true, nil
			}
			return false, fmt.Errorf("condition %s=%s (%s: %s)\nagent stderr:\n%s", c.Type, c.Status, c.Reason, c.Message, agent.stderr)
		}
		return false, fmt.Errorf("no %s condition yet\nagent stderr:\n%s", v1alpha1.ConditionGPUHealAcceleratorHealthy, agent.stderr)
	})
}
