package remediation

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
)

const predictedMessage = "GPU 5 (GPU-0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0, 0000:bb:00.0): failure risk 0.91 within 30m (threshold 0.80)"

// TestPredictedFailureDrainsOnlyWhenThePolicyOptsIn: a policy that lists
// the predictor's condition, with an action rule, drains the node before
// the GPU fails, and calls no provider.
func TestPredictedFailureDrainsOnlyWhenThePolicyOptsIn(t *testing.T) {
	e := newClockEnv(t)
	e.policy("predicted", func(s *v1alpha1.RemediationPolicySpec) {
		s.UnhealthyConditions = []v1alpha1.UnhealthyCondition{{Type: v1alpha1.ConditionGPUFailurePredicted,
			Status: metav1.ConditionTrue, For: metav1.Duration{Duration: time.Minute}}}
		s.Actions = []v1alpha1.ActionRule{{ConditionType: v1alpha1.ConditionGPUFailurePredicted, Action: v1alpha1.ActionCordonOnly}}
	})
	node := e.addNodes("predicted", 1)[0]
	e.runPod("default", "trainer-0", node, nil)
	e.editNode(node, func(n *corev1.Node) {
		n.Annotations = map[string]string{v1alpha1.AnnotationRecommendedActions: `{"GPUFailurePredicted":"none"}`}
	})
	e.setCondition(node, v1alpha1.ConditionGPUFailurePredicted, corev1.ConditionTrue, v1alpha1.ReasonGPUFailurePredicted, predictedMessage)
	e.step(time.Minute)

	nr := e.only(node)
	if nr.Status.Phase != v1alpha1.PhaseSucceeded || nr.Status.Action != v1alpha1.ActionCordonOnly {
		t.Errorf("phase %s action %s, want Succeeded by CordonOnly", nr.Status.Phase, nr.Status.Action)
	}
	if len(e.prov.Calls()) != 0 || len(nr.Status.ProviderRequests) != 0 {
		t.Errorf("provider called for a predicted failure: %+v", e.prov.Calls())
	}
	n, _ := e.node(node)
	if !n.Spec.Unschedulable || len(nr.Status.EvictedPods) != 1 {
		t.Errorf("node not left cordoned and drained: unschedulable %v, evicted %v", n.Spec.Unschedulable, nr.Status.EvictedPods)
	}
}

// The default conditions do not include the predictor's, and its advice
// ("none") maps to no action: a prediction alone never repairs.
func TestPredictionAloneNeverRepairs(t *testing.T) {
	p, err := newPolicy(&v1alpha1.RemediationPolicy{})
	if err != nil {
		t.Fatal(err)
	}
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{v1alpha1.AnnotationRecommendedActions: `{"GPUFailurePredicted":"none"}`}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{
			Type: v1alpha1.ConditionGPUFailurePredicted, Status: corev1.ConditionTrue, Message: predictedMessage,
			LastTransitionTime: metav1.NewTime(time.Now().Add(-time.Hour))}}},
	}
	if c := p.unhealthyNow(n); c != nil {
		t.Fatalf("default conditions act on %s", c.Type)
	}
	tr, err := triggerFrom(n, &n.Status.Conditions[0])
	if err != nil {
		t.Fatal(err)
	}
	if a := p.chooseAction(tr); a != v1alpha1.ActionIgnore {
		t.Errorf("a prediction without an action rule maps to %s, want Ignore", a)
	}
}
