//go:build integration

package agent

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/agent/kubecore"
	"github.com/gpuheal/gpuheal/internal/gpu/sim"
	"github.com/gpuheal/gpuheal/internal/testenv"
	"github.com/gpuheal/gpuheal/internal/testenv/testcluster"
	"github.com/gpuheal/gpuheal/internal/testproc"
)

// The agent's light core/v1 REST client against the real API server: the
// expected GPU count comes from the node's labels, in their order, else
// from its instance type.
func TestReadExpectedGPUsFromAPIServer(t *testing.T) {
	env := testcluster.Start(t, testenv.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tc := range []struct {
		name   string
		labels map[string]string // replacing the GPU Operator's count label
		want   int
	}{
		{"gpu operator", map[string]string{v1alpha1.LabelNvidiaGPUCount: "8"}, 8},
		{"karpenter over gpu operator", map[string]string{v1alpha1.LabelKarpenterInstanceGPUCount: "8", v1alpha1.LabelNvidiaGPUCount: "7"}, 8},
		{"eks auto mode over gpu operator", map[string]string{v1alpha1.LabelEKSInstanceGPUCount: "8", v1alpha1.LabelNvidiaGPUCount: "7"}, 8},
		// GFD counted again after a GPU died: the type still has 8.
		{"instance type over gpu operator", map[string]string{v1alpha1.LabelNvidiaGPUCount: "7"}, 8},
		{"no type, gpu operator", map[string]string{v1alpha1.LabelInstanceType: "m7i.large", v1alpha1.LabelNvidiaGPUCount: "4"}, 4},
		{"instance type only", nil, 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := gpuNodeWith(ctx, t, env.Client, tc.labels, 8)
			c, err := kubecore.NewClient(env.Kubeconfig, 0)
			if err != nil {
				t.Fatal(err)
			}
			if n, err := readExpectedGPUs(ctx, c, name); err != nil || n != tc.want {
				t.Fatalf("expected GPUs = %d, %v; want %d", n, err, tc.want)
			}
		})
	}
	c, err := kubecore.NewClient(env.Kubeconfig, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := readExpectedGPUs(ctx, c, "no-such-node"); err == nil {
		t.Fatal("reading a missing node succeeded")
	}
}

var nodeSeq int

// gpuNodeWith creates a p5.48xlarge test node without the GPU Operator's
// count label, with labels added and nvidia.com/gpu capacity gpus.
func gpuNodeWith(ctx context.Context, t *testing.T, c client.Client, labels map[string]string, gpus int64) string {
	t.Helper()
	nodeSeq++
	n := testenv.GPUNode(fmt.Sprintf("count-%d", nodeSeq))
	delete(n.Labels, v1alpha1.LabelNvidiaGPUCount)
	for k, v := range labels {
		n.Labels[k] = v
	}
	q := *resource.NewQuantity(gpus, resource.DecimalSI)
	n.Status.Capacity[testenv.GPUResource] = q
	n.Status.Allocatable[testenv.GPUResource] = q
	if err := c.Create(ctx, n); err != nil {
		t.Fatal(err)
	}
	// Create ignores the status; write it as the kubelet does.
	if err := c.Status().Update(ctx, n); err != nil {
		t.Fatal(err)
	}
	return n.Name
}

// A p5.48xlarge whose driver shows 7 GPUs, and whose nvidia.com/gpu
// capacity already dropped to 7, with no GPU-count label: the instance
// type says 8, so the agent sets the GPU condition False (NvidiaGPUMissing)
// on the Node.
func TestFewerGPUsThanTheInstanceTypeIsUnhealthy(t *testing.T) {
	runUntilGPUMissing(t, nil, 7, 0)
}

// The same node after a reboot: GPU feature discovery counted again and
// labelled it nvidia.com/gpu.count=7. The instance type still has 8, and
// wins: the node is unhealthy, not "7 of 7".
func TestGPUFeatureDiscoveryRecountDoesNotHideADeadGPU(t *testing.T) {
	runUntilGPUMissing(t, map[string]string{v1alpha1.LabelNvidiaGPUCount: "7"}, 7, 0)
}

// --expected-gpus is the fallback for what the cluster does not know: a
// lower flag does not hide the instance type's 8, and on a node whose
// labels name no count the flag's 8 is what the 7 found are held to.
func TestExpectedGPUsFlagIsTheFallback(t *testing.T) {
	t.Run("node count wins over a lower flag", func(t *testing.T) {
		runUntilGPUMissing(t, map[string]string{v1alpha1.LabelNvidiaGPUCount: "7"}, 7, 4)
	})
	t.Run("flag where the node names no count", func(t *testing.T) {
		runUntilGPUMissing(t, map[string]string{v1alpha1.LabelInstanceType: "m7i.48xlarge"}, 7, 8)
	})
}

// runUntilGPUMissing runs the agent (a simulated backend with found GPUs,
// --expected-gpus flag) against a p5.48xlarge test node with labels
// added and nvidia.com/gpu capacity found, until the Node's GPU
// condition is False with NvidiaGPUMissing.
func runUntilGPUMissing(t *testing.T, labels map[string]string, found, flag int) {
	t.Helper()
	env := testcluster.Start(t, testenv.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	name := gpuNodeWith(ctx, t, env.Client, labels, int64(found))
	kube, err := kubecore.NewClient(env.Kubeconfig, 0)
	if err != nil {
		t.Fatal(err)
	}
	src, err := sim.New(sim.Options{NodeName: name, GPUs: found})
	if err != nil {
		t.Fatal(err)
	}
	o := validOptions()
	o.Standalone, o.NodeName, o.ExpectedGPUs = false, name, flag
	o.Interval, o.CallTimeout = time.Second, 500*time.Millisecond
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- Run(runCtx, &o, Deps{Source: src, Kube: kube, PublishMetrics: func(http.Handler) {}}, io.Discard, slog.New(slog.DiscardHandler))
	}()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	testproc.Eventually(t, 30*time.Second, fmt.Sprintf("GPU condition False for %d GPUs found", found), func(ctx context.Context) (bool, error) {
		var n corev1.Node
		if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, &n); err != nil {
			return false, err
		}
		for _, c := range n.Status.Conditions {
			if c.Type == v1alpha1.ConditionGPUHealAcceleratorHealthy {
				if c.Status == corev1.ConditionFalse && c.Reason == "NvidiaGPUMissing" {
					return true, nil
				}
				return false, fmt.Errorf("condition %s (%s: %s)", c.Status, c.Reason, c.Message)
			}
		}
		return false, fmt.Errorf("no %s condition yet", v1alpha1.ConditionGPUHealAcceleratorHealthy)
	})
}
