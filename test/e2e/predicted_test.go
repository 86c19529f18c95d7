//go:build integration

package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/testenv"
	"github.com/gpuheal/gpuheal/internal/testenv/testcluster"
	"github.com/gpuheal/gpuheal/internal/testproc"
)

// TestPredictedFailureDrainsEndToEnd runs both binaries as shipped: the
// agent's predictor, with the shipped model and its threshold lowered so
// that the simulated GPUs alarm at once, sets GPUFailurePredicted on its
// Node; a policy that opts in to that condition with CordonOnly makes the
// controller cordon the node and evict its workload through the Eviction
// API, and call no provider. The model's accuracy is docs/predictor.md's
// subject; this test is about the path from a prediction to a drain.
func TestPredictedFailureDrainsEndToEnd(t *testing.T) {
	t.Parallel()
	env := testcluster.Start(t, testenv.Options{Kwok: true, Scheme: benchScheme(t)})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	names, err := testenv.CreateGPUNodes(ctx, env.Client, "pred", 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := testenv.WaitNodesReady(ctx, env.Client, names); err != nil {
		t.Fatal(err)
	}
	node := names[0]
	all := intstr.FromString("100%")
	policy := &v1alpha1.RemediationPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "predicted"},
		Spec: v1alpha1.RemediationPolicySpec{
			UnhealthyConditions: []v1alpha1.UnhealthyCondition{
				{Type: v1alpha1.ConditionGPUFailurePredicted, Status: metav1.ConditionTrue, For: metav1.Duration{Duration: time.Second}},
			},
			Actions:      []v1alpha1.ActionRule{{ConditionType: v1alpha1.ConditionGPUFailurePredicted, Action: v1alpha1.ActionCordonOnly}},
			Provider:     "kwok",
			MaxUnhealthy: &all,
			RecoveryHold: &metav1.Duration{Duration: time.Minute},
		},
	}
	if err := env.Client.Create(ctx, policy); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "trainer-pred"},
		Spec: corev1.PodSpec{
			NodeName:    node,
			Containers:  []corev1.Container{{Name: "main", Image: "trainer:latest"}},
			Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			// Kwok ends a pod at a random moment before its grace period runs
			// out; with none the drain waits ~1 s instead of up to 30.
			TerminationGracePeriodSeconds: new(int64),
		},
	}
	if err := env.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}

	startControllerBinary(t, env.Kubeconfig, "--poll-interval=200ms", "--audit-sink=none")

	dir := t.TempDir()
	kernelLog := filepath.Join(dir, "kmsg")
	writeFile(t, kernelLog, "")
	startClusterAgent(t, node, env.Kubeconfig, kernelLog, filepath.Join(dir, "state"), "--predictor-threshold=0.000001")

	var nr v1alpha1.NodeRemediation
	testproc.UntilTrue(ctx, t, "the predicted failure's incident Succeeded", func() bool {
		var list v1alpha1.NodeRemediationList
		if env.Client.List(ctx, &list) != nil || len(list.Items) != 1 {
			return false
		}
		nr = list.Items[0]
		return nr.Status.Phase == v1alpha1.PhaseSucceeded
	})
	if nr.Spec.Trigger.Type != v1alpha1.ConditionGPUFailurePredicted || !strings.Contains(nr.Spec.Trigger.Message, "failure predicted") {
		t.Errorf("trigger %s: %q, want the agent's GPUFailurePredicted", nr.Spec.Trigger.Type, nr.Spec.Trigger.Message)
	}
	if nr.Status.Action != v1alpha1.ActionCordonOnly || len(nr.Status.ProviderRequests) != 0 {
		t.Errorf("action %s with provider requests %+v, want CordonOnly and none", nr.Status.Action, nr.Status.ProviderRequests)
	}
	if len(nr.Status.EvictedPods) != 1 || nr.Status.EvictedPods[0] != "default/trainer-pred" {
		t.Errorf("evicted %v, want default/trainer-pred", nr.Status.EvictedPods)
	}
	var n corev1.Node
	if err := env.Client.Get(ctx, clientKey(node), &n); err != nil {
		t.Fatal(err)
	}
	if !n.Spec.Unschedulable {
		t.Errorf("node %s not left cordoned after a predicted failure", node)
	}
}
