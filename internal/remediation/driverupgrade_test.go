//go:build integration

package remediation

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
)

// TestDriverUpgradeIsMaintenance: nodes whose driver the GPU Operator is
// upgrading get no incident (and one Event each), whatever their GPU
// condition says, and neither breaker counts them: with maxUnhealthy and
// maxPerCause both 1, a failure on another node is remediated while two
// upgrading nodes show the GPU down and a third, upgrading now, had an
// incident of the same cause within the window.
func TestDriverUpgradeIsMaintenance(t *testing.T) {
	h := newHarness(t, "upg", 6)
	p := fastPolicy("upg")
	one := intstr.FromInt32(1)
	p.Spec.MaxUnhealthy = &one
	p.Spec.CorrelatedFaults = v1alpha1.CorrelatedFaults{MaxPerCause: &one, Window: &metav1.Duration{Duration: time.Hour}}
	p.Spec.Paused = true
	h.create(p)
	// One cause for every failure below.
	h.labelNodes(map[string]string{v1alpha1.LabelNvidiaDriverVersion: "570.86.15", v1alpha1.LabelZone: "us-east-1a"}, h.nodes...)
	h.startController(controllerConfig{})

	// Before its upgrade, earlier: an incident on nodes[3], over when the
	// node recovered.
	earlier := h.nodes[3]
	h.breakGPU(earlier, "replace")
	h.waitFor("an incident on "+earlier, 30*time.Second, func() (bool, error) { return len(h.incidents(earlier)) == 1, nil })
	h.setCondition(earlier, gpuCondition, corev1.ConditionTrue, "NoProblemDetected", "")
	h.waitLatestPhase(earlier, v1alpha1.PhaseCancelled, 30*time.Second)

	upgrading := h.nodes[:2]
	h.labelNodes(map[string]string{v1alpha1.LabelNvidiaDriverUpgradeState: v1alpha1.DriverUpgradeDrainRequired}, upgrading...)
	h.labelNodes(map[string]string{v1alpha1.LabelNvidiaDriverUpgradeState: v1alpha1.DriverUpgradeCordonRequired}, earlier)
	for _, n := range upgrading {
		h.breakGPU(n, "replace") // the driver is gone, and an agent says so
	}
	h.waitFor("a DriverUpgradeInProgress Event on each upgrading node", 30*time.Second, func() (bool, error) {
		got := upgradeEvents(h)
		return got[upgrading[0]] >= 1 && got[upgrading[1]] >= 1 && got[earlier] >= 1, nil
	})

	patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"paused": false}})
	if err := h.c.Patch(t.Context(), &v1alpha1.RemediationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "upg"}}, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}
	sick := h.nodes[2]
	h.breakGPU(sick, "replace")
	h.waitFor("the incident on "+sick+" admitted", 60*time.Second, func() (bool, error) {
		nr, ok := h.latest(sick)
		if !ok {
			return false, nil
		}
		c := meta.FindStatusCondition(nr.Status.Conditions, v1alpha1.ConditionAdmitted)
		if c != nil && c.Status == metav1.ConditionFalse && (c.Reason == v1alpha1.ReasonBreakerOpen || c.Reason == v1alpha1.ReasonCauseBreakerOpen) {
			return false, fmt.Errorf("held: %s: %s", c.Reason, c.Message)
		}
		return c != nil && c.Status == metav1.ConditionTrue, nil
	})
	for _, n := range upgrading {
		if items := h.incidents(n); len(items) != 0 {
			t.Errorf("node %s in a driver upgrade has %d incidents, want none", n, len(items))
		}
	}
	for n, count := range upgradeEvents(h) {
		if count != 1 {
			t.Errorf("%d DriverUpgradeInProgress Events on %s, want 1", count, n)
		}
	}

	// The upgrade ends with the GPU still down: now it is an incident.
	h.labelNodes(map[string]string{v1alpha1.LabelNvidiaDriverUpgradeState: v1alpha1.DriverUpgradeDone}, upgrading[0])
	h.waitFor("an incident on "+upgrading[0]+" once its upgrade is done", 30*time.Second, func() (bool, error) {
		return len(h.incidents(upgrading[0])) == 1, nil
	})
}

// upgradeEvents counts DriverUpgradeInProgress Events (and repeats of
// them in an Event series) per node.
func upgradeEvents(h *harness) map[string]int {
	h.t.Helper()
	var evs eventsv1.EventList
	if err := h.c.List(h.t.Context(), &evs); err != nil {
		h.t.Fatal(err)
	}
	out := map[string]int{}
	for _, ev := range evs.Items {
		if ev.Reason != v1alpha1.EventReasonDriverUpgradeInProgress {
			continue
		}
		n := 1
		if ev.Series != nil {
			n = int(ev.Series.Count)
		}
		out[ev.Regarding.Name] += n
	}
	return out
}
