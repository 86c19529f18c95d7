package remediation

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
)

// predictedCondition is the agent's failure predictor's condition: True
// while a GPU's predicted risk is above the model's threshold.
const predictedCondition = "GPUFailurePredicted"

const predictedMessage = "GPU 5 (GPU-0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0, 0000:bb:00.0): failure risk 0.91 within 30m " +
	"(threshold 0.80); recommended action: none"

// TestPredictedFailureDrainsOnlyWhenThePolicyOptsIn: a policy that lists
// the predictor's condition, with an action rule, drains the node before
// the GPU fails, and calls no provider.
func TestPredictedFailureDrainsOnlyWhenThePolicyOptsIn(t *testing.T) {
	h := newHarness(t, "predicted", 1)
	p := fastPolicy("predicted", "predicted")
	p.Spec.UnhealthyConditions = append(p.Spec.UnhealthyConditions, v1alpha1.UnhealthyCondition{
		Type: predictedCondition, Status: corev1.ConditionTrue, For: metav1.Duration{Duration: time.Second}})
	p.Spec.Actions = []v1alpha1.ActionRule{{ConditionType: predictedCondition, Action: v1alpha1.ActionCordonOnly}}
	h.create(p)
	h.startController(controllerConfig{})
	node := h.nodes[0]
	h.runPod("default", "trainer-0", node, nil)

	h.setCondition(node, predictedCondition, corev1.ConditionTrue, "GPUFailurePredicted", predictedMessage)
	nr := h.waitPhase(node, v1alpha1.PhaseSucceeded, time.Minute)
	if nr.Status.Action != v1alpha1.ActionCordonOnly {
		t.Errorf("action %s, want CordonOnly", nr.Status.Action)
	}
	if len(nr.Status.ProviderRequests) != 0 {
		t.Errorf("provider called for a predicted failure: %+v", nr.Status.ProviderRequests)
	}
	n, ok := h.node(node)
	if !ok || !n.Spec.Unschedulable {
		t.Fatalf("node %s not left cordoned and drained (exists %v)", node, ok)
	}
	want := []string{"default/trainer-0"}
	if len(nr.Status.EvictedPods) != 1 || nr.Status.EvictedPods[0] != want[0] {
		t.Errorf("evicted %v, want %v", nr.Status.EvictedPods, want)
	}
}

// The default conditions do not include the predictor's, and its advice
// ("none") maps to no action: a prediction alone never repairs.
func TestPredictionAloneNeverRepairs(t *testing.T) {
	p, err := newPolicy(&v1alpha1.RemediationPolicy{})
	if err != nil {
		t.Fatal(err)
	}
	n := &corev1.Node{Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{
		Type: predictedCondition, Status: corev1.ConditionTrue, Message: predictedMessage,
		LastTransitionTime: metav1.NewTime(time.Now().Add(-time.Hour))}}}}
	if c := p.unhealthyNow(n); c != nil {
		t.Fatalf("default conditions act on %s", c.Type)
	}
	c := n.Status.Conditions[0]
	if a := p.chooseAction(triggerFrom(&c)); a != v1alpha1.ActionIgnore {
		t.Errorf("a prediction without an action rule maps to %s, want Ignore", a)
	}
}
