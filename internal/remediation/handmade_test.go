//go:build integration

package remediation

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
)

// TestHandMadeIncidentCannotBypassItsPolicy: on the real API server, a
// NodeRemediation made by hand that names a laxer policy than the one
// selecting its node, or leaves out the policy label that maxParallel
// counts by, or claims a condition the node does not show, is refused
// (Cancelled/PolicyMismatch) and the node is never touched. One that matches
// goes through the policy's limits (paused here: held) and acts on the
// node's own advice, not on the advice written into its spec.
func TestHandMadeIncidentCannotBypassItsPolicy(t *testing.T) {
	h := newHarness(t, "hand", 3)
	strict := fastPolicy("strict")
	strict.Spec.NodeSelector.MatchLabels["pool"] = "a"
	strict.Spec.Paused = true
	// The opener waits an hour: every incident of this test is hand-made.
	strict.Spec.UnhealthyConditions[0].For = metav1.Duration{Duration: time.Hour}
	lax := fastPolicy("lax")
	lax.Spec.NodeSelector.MatchLabels["pool"] = "b"
	all := intstr.FromString("100%")
	lax.Spec.MaxParallel = &all
	h.create(strict)
	h.create(lax)
	h.labelNodes(map[string]string{"pool": "a"}, h.nodes...)
	h.startController(controllerConfig{})
	since := metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second))
	handMade := func(name, pol string, labelled bool, trig v1alpha1.Trigger) *v1alpha1.NodeRemediation {
		nr := &v1alpha1.NodeRemediation{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       v1alpha1.NodeRemediationSpec{NodeName: h.nodes[1], PolicyName: pol, Trigger: trig},
		}
		if labelled {
			nr.Labels = map[string]string{v1alpha1.LabelPolicy: pol}
		}
		h.create(nr)
		return nr
	}
	gpuFalse := v1alpha1.Trigger{Type: gpuCondition, Status: metav1.ConditionFalse, Reason: "NvidiaXID79Error", Since: since, RecommendedAction: "replace"}
	h.breakGPU(h.nodes[1], "reboot") // the agent advises a reboot
	for _, tc := range []struct {
		name, policy string
		labelled     bool
		trigger      v1alpha1.Trigger
		want         string
	}{
		{"laxer-policy", "lax", true, gpuFalse, "selected by policy strict, not lax"},
		{"no-label", "strict", false, gpuFalse, "label gpuheal.io/policy"},
		{"made-up-condition", "strict", true, v1alpha1.Trigger{Type: "Ready", Status: metav1.ConditionFalse, Since: since}, "does not show Ready=False"},
	} {
		handMade(tc.name, tc.policy, tc.labelled, tc.trigger)
		h.waitFor(tc.name+" refused", 30*time.Second, func() (bool, error) {
			var nr v1alpha1.NodeRemediation
			err := h.c.Get(t.Context(), client.ObjectKey{Name: tc.name}, &nr)
			return nr.Status.Phase == v1alpha1.PhaseCancelled && nr.Status.Reason == v1alpha1.ReasonPolicyMismatch && contains(nr.Status.Message, tc.want), err
		})
	}
	if n, _ := h.node(h.nodes[1]); n.Spec.Unschedulable || hasTaint(n) {
		t.Fatalf("node %s touched by a refused incident", h.nodes[1])
	}

	// A matching one is held by the paused policy and decided on the
	// node's advice (reboot), not the replace written into its spec.
	handMade("matching", "strict", true, gpuFalse)
	h.waitFor("the matching hand-made incident held by the paused policy", 30*time.Second, func() (bool, error) {
		var nr v1alpha1.NodeRemediation
		if err := h.c.Get(t.Context(), client.ObjectKey{Name: "matching"}, &nr); err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(nr.Status.Conditions, v1alpha1.ConditionAdmitted)
		if nr.Status.Phase != "" && nr.Status.Phase != v1alpha1.PhasePending {
			return false, fmt.Errorf("phase %s (%s), want held", nr.Status.Phase, nr.Status.Message)
		}
		if nr.Status.Action != "" && nr.Status.Action != v1alpha1.ActionReboot {
			return false, fmt.Errorf("action %s, want the node's advice, Reboot", nr.Status.Action)
		}
		return c != nil && c.Reason == v1alpha1.ReasonPaused, nil
	})
	if n, _ := h.node(h.nodes[1]); n.Spec.Unschedulable {
		t.Fatalf("node %s cordoned although its policy is paused", h.nodes[1])
	}
}
