package remediation

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
)

// TestBreakerCountsNodesHeldOutOfService: a node that gpuheal cordoned and
// still holds (here a CordonOnly drain ahead of a prediction that has since
// cleared) counts against maxUnhealthy like a failing one, so a model gone
// wrong and a real failure together cannot take more of the fleet than the
// policy allows.
func TestBreakerCountsNodesHeldOutOfService(t *testing.T) {
	e := newClockEnv(t)
	one, five := intstr.FromInt32(1), intstr.FromInt32(5)
	e.policy("held", func(s *v1alpha1.RemediationPolicySpec) {
		s.MaxUnhealthy, s.MaxParallel = &one, &five
		s.UnhealthyConditions = append(append([]v1alpha1.UnhealthyCondition{}, defaultUnhealthyConditions...),
			v1alpha1.UnhealthyCondition{Type: v1alpha1.ConditionGPUFailurePredicted, Status: metav1.ConditionTrue, For: metav1.Duration{Duration: time.Minute}})
		s.Actions = []v1alpha1.ActionRule{{ConditionType: v1alpha1.ConditionGPUFailurePredicted, Action: v1alpha1.ActionCordonOnly}}
	})
	nodes := e.addNodes("held", 10)
	predicted, broken := nodes[0], nodes[1]
	e.setCondition(predicted, v1alpha1.ConditionGPUFailurePredicted, corev1.ConditionTrue, v1alpha1.ReasonGPUFailurePredicted, predictedMessage)
	e.step(time.Minute)
	if nr := e.only(predicted); nr.Status.Phase != v1alpha1.PhaseSucceeded || nr.Status.Action != v1alpha1.ActionCordonOnly {
		t.Fatalf("predicted node's incident %s/%s, want Succeeded by CordonOnly", nr.Status.Phase, nr.Status.Action)
	}
	// The prediction clears; the node stays cordoned for a person.
	e.setCondition(predicted, v1alpha1.ConditionGPUFailurePredicted, corev1.ConditionFalse, v1alpha1.ReasonNoFailurePredicted, "")
	e.step(time.Minute)
	if n, _ := e.node(predicted); !n.Spec.Unschedulable {
		t.Fatal("CordonOnly node uncordoned by itself")
	}

	e.breakGPU(broken, "reboot")
	e.step(2 * time.Minute)
	nr := e.only(broken)
	c := meta.FindStatusCondition(nr.Status.Conditions, v1alpha1.ConditionAdmitted)
	if nr.Status.Phase != v1alpha1.PhasePending || c == nil || c.Reason != v1alpha1.ReasonBreakerOpen {
		t.Fatalf("second node's incident %s, Admitted %+v: want held by the breaker (1 failing + 1 held > maxUnhealthy 1)", nr.Status.Phase, c)
	}
	if n, _ := e.node(broken); n.Spec.Unschedulable {
		t.Error("second node cordoned while the breaker was open")
	}
	loop := &policyStatusLoop{client: e.c, recorder: e.events, fleet: e.rems.fleet, slots: &e.rems.slots}
	loop.refresh(e.ctx)
	var pol v1alpha1.RemediationPolicy
	if err := e.c.Get(e.ctx, clientKey("held"), &pol); err != nil || pol.Status.UnhealthyNodes != 2 || !pol.Status.BreakerOpen {
		t.Fatalf("policy status %+v (%v), want 2 unhealthy or held and the breaker open", pol.Status, err)
	}

	// An operator hands the predicted node back (our taint and annotation
	// gone): the breaker closes and the held incident starts.
	e.editNode(predicted, func(n *corev1.Node) { undoCordon(n) })
	e.step(5 * e.opts.Poll)
	if nr := e.only(broken); !nr.Status.Phase.Active() && !nr.Status.Phase.Terminal() {
		t.Errorf("held incident in %s once the node was handed back, want started", nr.Status.Phase)
	}
}
