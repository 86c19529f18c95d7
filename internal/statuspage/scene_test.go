//go:build integration

package statuspage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/testenv"
)

// sceneNode is how buildScene leaves a node, besides healthy and gold.
type sceneNode struct {
	tier, score string
	healthyGPUs int
	// bad is a condition set False with reason and message.
	bad, reason, message string
	cordoned             bool
}

// sceneIncident is a NodeRemediation of the scene; times are before now.
type sceneIncident struct {
	node     int
	detected time.Duration // before now
	action   v1alpha1.Action
	// phases after detection, in order; the last one is current.
	phases []v1alpha1.Phase
	after  []time.Duration
}

// buildScene makes a small fleet as an operator would see it on an
// ordinary day: 16 nodes, mostly gold; one with a GPU fault being drained,
// one with a kernel fault waiting its turn, one rebooted and verifying; a
// week of incidents; one policy. It returns the node names; the first is
// healthy.
func buildScene(ctx context.Context, t *testing.T, c client.Client, now time.Time) []string {
	t.Helper()
	names, err := testenv.CreateGPUNodes(ctx, c, "p5", 16)
	if err != nil {
		t.Fatal(err)
	}
	special := map[int]sceneNode{
		4:  {tier: "silver", score: "79.5", healthyGPUs: 8, bad: v1alpha1.ConditionGPUHealKernelHealthy, reason: "KernelOops", message: "kernel oops in nvidia_uvm"},
		5:  {tier: "silver", score: "82.4", healthyGPUs: 8},
		9:  {tier: "bronze", score: "41.3", healthyGPUs: 7, bad: v1alpha1.ConditionGPUHealAcceleratorHealthy, reason: "NvidiaXID79Error", message: "GPU 0000:3b:00.0 has fallen off the bus", cordoned: true},
		11: {tier: "silver", score: "76.0", healthyGPUs: 8},
		13: {tier: "silver", score: "68.2", healthyGPUs: 8, cordoned: true},
	}
	for i, name := range names {
		s, ok := special[i]
		if !ok {
			s = sceneNode{tier: "gold", score: strconv.FormatFloat(100-float64(i%3)*1.5, 'f', 1, 64), healthyGPUs: 8}
		}
		setNode(ctx, t, c, name, s, now)
	}

	createPolicy(ctx, t, c, v1alpha1.RemediationPolicyStatus{MatchedNodes: 16, UnhealthyNodes: 2, InFlight: 2,
		Conditions: []metav1.Condition{{Type: v1alpha1.ConditionBreakerOpen, Status: metav1.ConditionFalse, Reason: "WithinLimit",
			Message: "unhealthy nodes within maxUnhealthy", LastTransitionTime: metav1.NewTime(now.Add(-72 * time.Hour))}}})

	const (
		P, Co, Dr = v1alpha1.PhasePending, v1alpha1.PhaseCordoned, v1alpha1.PhaseDraining
		Dd, Rb    = v1alpha1.PhaseDrained, v1alpha1.PhaseRebooting
		Rp, V, S  = v1alpha1.PhaseReplacing, v1alpha1.PhaseVerifying, v1alpha1.PhaseSucceeded
		F, Ca     = v1alpha1.PhaseFailed, v1alpha1.PhaseCancelled
	)
	m, sec := time.Minute, time.Second
	reboot := []v1alpha1.Phase{P, Co, Dr, Dd, Rb, V, S}
	replace := []v1alpha1.Phase{P, Co, Dr, Dd, Rp, V, S}
	for _, in := range []sceneIncident{
		{2, 150 * time.Hour, v1alpha1.ActionReboot, reboot, []time.Duration{2 * m, 2*m + sec, 2*m + 2*sec, 3 * m, 3*m + sec, 4 * m, 7*m + 12*sec}},
		{6, 122 * time.Hour, v1alpha1.ActionReboot, reboot, []time.Duration{2 * m, 2*m + sec, 2*m + 2*sec, 3 * m, 3*m + sec, 4 * m, 5*m + 40*sec}},
		{11, 97 * time.Hour, v1alpha1.ActionReplace, replace, []time.Duration{2 * m, 2*m + sec, 2*m + 2*sec, 4 * m, 4*m + sec, 6 * m, 16*m + 30*sec}},
		{9, 73 * time.Hour, v1alpha1.ActionReboot, reboot, []time.Duration{2 * m, 2*m + sec, 2*m + 2*sec, 3 * m, 3*m + sec, 4 * m, 6*m + 5*sec}},
		{3, 49 * time.Hour, v1alpha1.ActionReboot, []v1alpha1.Phase{P, Co, Ca}, []time.Duration{2 * m, 2*m + sec, 3 * m}},
		{14, 36 * time.Hour, v1alpha1.ActionReboot, reboot, []time.Duration{2 * m, 2*m + sec, 2*m + 2*sec, 4 * m, 4*m + sec, 5 * m, 9*m + 20*sec}},
		{12, 20 * time.Hour, v1alpha1.ActionReplace, []v1alpha1.Phase{P, Co, Dr, Dd, Rp, V, F}, []time.Duration{2 * m, 2*m + sec, 2*m + 2*sec, 3 * m, 3*m + sec, 5 * m, 35 * m}},
		{5, 8 * time.Hour, v1alpha1.ActionReboot, reboot, []time.Duration{2 * m, 2*m + sec, 2*m + 2*sec, 3 * m, 3*m + sec, 3*m + 30*sec, 4*m + 50*sec}},
		{13, 14 * m, v1alpha1.ActionReboot, []v1alpha1.Phase{P, Co, Dr, Dd, Rb, V}, []time.Duration{2 * m, 2*m + sec, 2*m + 2*sec, 3 * m, 3*m + sec, 4 * m}},
		{9, 5 * m, v1alpha1.ActionReboot, []v1alpha1.Phase{P, Co, Dr}, []time.Duration{2 * m, 2*m + sec, 2*m + 2*sec}},
		{4, 3 * m, v1alpha1.ActionReboot, []v1alpha1.Phase{P}, []time.Duration{2 * m}},
	} {
		createIncident(ctx, t, c, names[in.node], now, in)
	}
	return names
}

func setNode(ctx context.Context, t *testing.T, c client.Client, name string, s sceneNode, now time.Time) {
	t.Helper()
	var n corev1.Node
	if err := c.Get(ctx, client.ObjectKey{Name: name}, &n); err != nil {
		t.Fatal(err)
	}
	orig := n.DeepCopy()
	n.Labels[v1alpha1.LabelGPUHealthyCount] = strconv.Itoa(s.healthyGPUs)
	n.Labels[v1alpha1.LabelHealthTier] = s.tier
	n.Annotations[v1alpha1.AnnotationHealthScore] = s.score
	n.Spec.Unschedulable = s.cordoned
	if err := c.Patch(ctx, &n, client.MergeFrom(orig)); err != nil {
		t.Fatalf("labelling node %s: %v", name, err)
	}
	orig = n.DeepCopy()
	since := metav1.NewTime(now.Add(-72 * time.Hour))
	n.Status.Conditions = nil
	for _, typ := range []corev1.NodeConditionType{v1alpha1.ConditionGPUHealAcceleratorHealthy, v1alpha1.ConditionGPUHealKernelHealthy, corev1.NodeReady} {
		cond := corev1.NodeCondition{Type: typ, Status: corev1.ConditionTrue, Reason: "Healthy", LastHeartbeatTime: metav1.NewTime(now), LastTransitionTime: since}
		if string(typ) == s.bad {
			cond.Status, cond.Reason, cond.Message = corev1.ConditionFalse, s.reason, s.message
			cond.LastTransitionTime = metav1.NewTime(now.Add(-5 * time.Minute))
		}
		n.Status.Conditions = append(n.Status.Conditions, cond)
	}
	if err := c.Status().Patch(ctx, &n, client.MergeFrom(orig)); err != nil {
		t.Fatalf("patching status of node %s: %v", name, err)
	}
}

func createPolicy(ctx context.Context, t *testing.T, c client.Client, st v1alpha1.RemediationPolicyStatus) {
	t.Helper()
	p := &v1alpha1.RemediationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	if err := c.Create(ctx, p); err != nil {
		t.Fatalf("creating policy: %v", err)
	}
	p.Status = st
	if err := c.Status().Update(ctx, p); err != nil {
		t.Fatalf("updating status of policy: %v", err)
	}
}

func createIncident(ctx context.Context, t *testing.T, c client.Client, node string, now time.Time, in sceneIncident) {
	t.Helper()
	detected := now.Add(-in.detected)
	sum := sha256.Sum256([]byte(node + detected.String()))
	nr := &v1alpha1.NodeRemediation{
		ObjectMeta: metav1.ObjectMeta{Name: node + "-" + hex.EncodeToString(sum[:4])},
		Spec: v1alpha1.NodeRemediationSpec{NodeName: node, PolicyName: "default", Trigger: v1alpha1.Trigger{
			Type: v1alpha1.ConditionGPUHealAcceleratorHealthy, Status: metav1.ConditionFalse, Reason: "NvidiaXID79Error", Since: metav1.NewTime(detected),
		}},
	}
	if node == "p5-0004" {
		nr.Spec.Trigger.Type, nr.Spec.Trigger.Reason = v1alpha1.ConditionGPUHealKernelHealthy, "KernelOops"
	}
	if err := c.Create(ctx, nr); err != nil {
		t.Fatalf("creating incident on %s: %v", node, err)
	}
	nr.Status.Action = in.action
	for i, p := range in.phases {
		nr.Status.Phase = p
		nr.Status.Phases = append(nr.Status.Phases, v1alpha1.PhaseTransition{Phase: p, Time: metav1.NewMicroTime(detected.Add(in.after[i]))})
	}
	if err := c.Status().Update(ctx, nr); err != nil {
		t.Fatalf("updating status of incident on %s: %v", node, err)
	}
}
