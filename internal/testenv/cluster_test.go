//go:build integration

package testenv_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/testenv"
	"github.com/gpuheal/gpuheal/internal/testenv/testcluster"
)

// TestFleetOfFakeGPUNodes is the foundation's acceptance test: the real API
// server and kwok bring 100 GPU nodes to Ready, and a NodeCondition written
// the way the agent writes it survives kwok's own status updates.
func TestFleetOfFakeGPUNodes(t *testing.T) {
	t.Parallel()
	env := testcluster.Start(t, testenv.Options{Kwok: true})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	names, err := testenv.CreateGPUNodes(ctx, env.Client, "gpu", 100)
	if err != nil {
		t.Fatal(err)
	}
	if err := testenv.WaitNodesReady(ctx, env.Client, names); err != nil {
		t.Fatal(err)
	}

	var node corev1.Node
	if err := env.Client.Get(ctx, client.ObjectKey{Name: names[42]}, &node); err != nil {
		t.Fatal(err)
	}
	if got := node.Status.Capacity[testenv.GPUResource]; got.Value() != 8 {
		t.Errorf("capacity nvidia.com/gpu = %s, want 8", got.String())
	}
	if !strings.HasPrefix(node.Spec.ProviderID, "aws:///us-east-1") {
		t.Errorf("providerID = %q", node.Spec.ProviderID)
	}

	base := node.DeepCopy()
	node.Status.Conditions = append(node.Status.Conditions, corev1.NodeCondition{
		Type:               v1alpha1.ConditionGPUHealAcceleratorHealthy,
		Status:             corev1.ConditionFalse,
		Reason:             "NvidiaXID79Error",
		Message:            "GPU 0000:18:00.0 has fallen off the bus",
		LastHeartbeatTime:  metav1.Now(),
		LastTransitionTime: metav1.Now(),
	})
	// Strategic merge keys conditions by type, so kwok's Ready and ours
	// coexist; a JSON merge patch would replace the whole list.
	if err := env.Client.Status().Patch(ctx, &node, client.StrategicMergeFrom(base)); err != nil {
		t.Fatalf("patching condition: %v", err)
	}

	var back corev1.Node
	if err := env.Client.Get(ctx, client.ObjectKey{Name: names[42]}, &back); err != nil {
		t.Fatal(err)
	}
	var found *corev1.NodeCondition
	for i := range back.Status.Conditions {
		if back.Status.Conditions[i].Type == v1alpha1.ConditionGPUHealAcceleratorHealthy {
			found = &back.Status.Conditions[i]
		}
	}
	if found == nil || found.Status != corev1.ConditionFalse || found.Reason != "NvidiaXID79Error" {
		t.Fatalf("condition read back = %+v", found)
	}
	if !testenv.NodeReady(&back) {
		t.Errorf("node lost its Ready condition after our patch: %+v", back.Status.Conditions)
	}
}

// With Workloads, the real kube-controller-manager and kube-scheduler make
// a Deployment's pods, place them on kwok's GPU nodes by their GPU
// requests, and give the PodDisruptionBudget its status, which the
// controller's drain depends on.
func TestWorkloadsRunOnFakeGPUNodes(t *testing.T) {
	t.Parallel()
	env := testcluster.Start(t, testenv.Options{Kwok: true, Workloads: true})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	names, err := testenv.CreateGPUNodes(ctx, env.Client, "wl", 3)
	if err != nil {
		t.Fatal(err)
	}
	if err := testenv.WaitNodesReady(ctx, env.Client, names); err != nil {
		t.Fatal(err)
	}
	// 5 pods × 4 GPUs fit 3 nodes × 8 GPUs only two to a node.
	if err := testenv.CreateGPUWorkload(ctx, env.Client, "default", "trainer", 5, 4); err != nil {
		t.Fatal(err)
	}
	if err := testenv.WaitWorkloadRunning(ctx, env.Client, "default", "trainer", 5); err != nil {
		t.Fatal(err)
	}
	var pods corev1.PodList
	if err := env.Client.List(ctx, &pods, client.MatchingLabels{testenv.WorkloadLabel: "trainer"}); err != nil {
		t.Fatal(err)
	}
	perNode := map[string]int{}
	for _, p := range pods.Items {
		perNode[p.Spec.NodeName]++
	}
	for node, n := range perNode {
		if n > 2 {
			t.Errorf("node %s runs %d pods of 4 GPUs; it has 8", node, n)
		}
	}
}

// A paused API server answers nothing until resumed; then it serves again.
func TestPauseAPIServer(t *testing.T) {
	t.Parallel()
	env := testcluster.Start(t, testenv.Options{})
	// The client learns Node's REST mapping on its first request, by
	// discovery that ignores the request's context: made against a paused
	// server that first request hangs for ~56 s whatever its deadline. A
	// warm client's paused request ends at its deadline.
	var nodes corev1.NodeList
	if err := env.Client.List(context.Background(), &nodes); err != nil {
		t.Fatal(err)
	}
	if err := env.PauseAPIServer(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	paused := time.Now()
	if err := env.Client.List(ctx, &nodes); err == nil {
		t.Fatal("a paused API server answered")
	}
	if d := time.Since(paused); d > 5*time.Second {
		t.Errorf("a request to the paused server took %v, past its 300ms deadline", d)
	}
	if err := env.ResumeAPIServer(); err != nil {
		t.Fatal(err)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel2()
	start := time.Now()
	if err := env.Client.List(ctx2, &nodes); err != nil {
		t.Fatalf("a resumed API server does not answer: %v", err)
	}
	t.Logf("answered %v after resuming", time.Since(start))
}

// TestRestartKwok: after a restart kwok still serves the nodes it had and
// initializes new ones.
func TestRestartKwok(t *testing.T) {
	t.Parallel()
	env := testcluster.Start(t, testenv.Options{Kwok: true})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	first, err := testenv.CreateGPUNodes(ctx, env.Client, "before-restart", 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := testenv.WaitNodesReady(ctx, env.Client, first); err != nil {
		t.Fatal(err)
	}
	if err := env.RestartKwok(ctx); err != nil {
		t.Fatal(err)
	}
	second, err := testenv.CreateGPUNodes(ctx, env.Client, "after-restart", 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := testenv.WaitNodesReady(ctx, env.Client, append(first, second...)); err != nil {
		t.Fatalf("kwok after its restart: %v", err)
	}
}
