//go:build integration

package remediation

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
)

// labelNodes merges labels into nodes (a patch: kwok's heartbeats would
// make an update conflict).
func (h *harness) labelNodes(labels map[string]string, nodes ...string) {
	h.t.Helper()
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": labels}})
	for _, n := range nodes {
		if err := h.c.Patch(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}, client.RawPatch(types.MergePatchType, patch)); err != nil {
			h.t.Fatalf("labelling %s: %v", n, err)
		}
	}
}

// latest is the node's newest incident, if any.
func (h *harness) latest(node string) (v1alpha1.NodeRemediation, bool) {
	items := h.incidents(node)
	if len(items) == 0 {
		return v1alpha1.NodeRemediation{}, false
	}
	last := items[0]
	for _, it := range items[1:] {
		if last.CreationTimestamp.Before(&it.CreationTimestamp) {
			last = it
		}
	}
	return last, true
}

func (h *harness) waitHeldByCause(nodes ...string) {
	h.t.Helper()
	h.waitFor(fmt.Sprintf("incidents of %v held by their cause's breaker", nodes), 30*time.Second, func() (bool, error) {
		for _, n := range nodes {
			nr, ok := h.latest(n)
			if !ok {
				return false, nil
			}
			if nr.Status.Phase != v1alpha1.PhasePending {
				return false, fmt.Errorf("%s went on (%s) while its cause's breaker was open", nr.Name, nr.Status.Phase)
			}
			if c := meta.FindStatusCondition(nr.Status.Conditions, v1alpha1.ConditionAdmitted); c == nil || c.Reason != v1alpha1.ReasonCauseBreakerOpen {
				return false, nil
			}
		}
		return true, nil
	})
}

func (h *harness) waitLatestPhase(node string, phase v1alpha1.Phase, timeout time.Duration) v1alpha1.NodeRemediation {
	h.t.Helper()
	var got v1alpha1.NodeRemediation
	h.waitFor(fmt.Sprintf("latest incident of %s in %s", node, phase), timeout, func() (bool, error) {
		nr, ok := h.latest(node)
		got = nr
		return ok && nr.Status.Phase == phase, nil
	})
	return got
}

// TestDriverRolloutTripsTheCauseBreaker: a driver rollout breaks three
// nodes at a time on the real API server with kwok nodes. The first wave
// is within maxPerCause and is replaced (each incident Succeeded only once
// its replacement is Ready and healthy); the second wave trips the cause's
// breaker and waits, while a failure of another cause is remediated; a
// replacement that fails the same way waits too; a person's annotation
// closes the breaker and the held incidents go on.
func TestDriverRolloutTripsTheCauseBreaker(t *testing.T) {
	h := newHarness(t, "roll", 9)
	p := fastPolicy("roll")
	three := intstr.FromInt32(3)
	p.Spec.MaxParallel = &three
	p.Spec.CorrelatedFaults = v1alpha1.CorrelatedFaults{MaxPerCause: &three, Window: &metav1.Duration{Duration: time.Hour}}
	h.create(p)
	// One zone: the cause includes the zone, and the test fleet spreads.
	h.labelNodes(map[string]string{v1alpha1.LabelNvidiaDriverVersion: "570.86.15", v1alpha1.LabelZone: "us-east-1a"}, h.nodes...)
	h.startController(controllerConfig{})
	rollout := map[string]string{v1alpha1.LabelNvidiaDriverVersion: "580.65.06"}

	wave1 := h.nodes[:3]
	h.labelNodes(rollout, wave1...)
	for _, n := range wave1 {
		h.breakGPU(n, "replace")
	}
	var repls []string
	for _, n := range wave1 {
		nr := h.waitPhase(n, v1alpha1.PhaseSucceeded, time.Minute)
		if nr.Status.Replacement == "" || nr.Status.Reason != v1alpha1.ReasonReplaced {
			t.Fatalf("first wave %s: %s/%s replacement %q, want Replaced with a named replacement", n, nr.Status.Phase, nr.Status.Reason, nr.Status.Replacement)
		}
		repl, _ := h.node(nr.Status.Replacement)
		if repl == nil || repl.Labels[v1alpha1.LabelNvidiaDriverVersion] != "580.65.06" || !nodeReady(repl) {
			t.Fatalf("replacement %s of %s: %+v, want Ready on the new driver", nr.Status.Replacement, n, repl)
		}
		repls = append(repls, nr.Status.Replacement)
	}

	wave2 := h.nodes[3:6]
	h.labelNodes(rollout, wave2...)
	for _, n := range wave2 {
		h.breakGPU(n, "replace")
	}
	h.waitHeldByCause(wave2...)
	other := h.nodes[6] // still on the old driver
	h.breakGPU(other, "replace")
	h.waitPhase(other, v1alpha1.PhaseSucceeded, time.Minute)
	for _, n := range wave2 {
		if node, _ := h.node(n); node.Spec.Unschedulable {
			t.Errorf("%s cordoned while its cause's breaker was open", n)
		}
	}

	var pol v1alpha1.RemediationPolicy
	if err := h.c.Get(t.Context(), client.ObjectKey{Name: "roll"}, &pol); err != nil || len(pol.Status.CauseBreakers) != 1 {
		t.Fatalf("cause breakers %+v (%v), want one", pol.Status.CauseBreakers, err)
	}
	b := pol.Status.CauseBreakers[0]
	if b.Cause.DriverVersion != "580.65.06" || b.Cause.Zone != "us-east-1a" || b.Cause.InstanceType != "p5.48xlarge" || b.Cause.Condition != gpuCondition+"/NvidiaXID79Error" {
		t.Errorf("breaker's cause %+v, want the new driver's Xid 79 on p5.48xlarge in us-east-1a", b.Cause)
	}
	c := b.Cause
	if v := testutil.ToFloat64(causeBreakerOpen.WithLabelValues("roll", b.ID, c.Condition, c.DriverVersion, c.KernelVersion, c.Image, c.InstanceType, c.Zone)); v != 1 {
		t.Errorf("gpuheal_cause_breaker_open = %v, want 1", v)
	}
	h.waitFor("a CauseBreakerOpened Event on the policy naming the driver", 10*time.Second, func() (bool, error) {
		var evs eventsv1.EventList
		if err := h.c.List(t.Context(), &evs); err != nil {
			return false, err
		}
		for _, ev := range evs.Items {
			if ev.Reason == v1alpha1.EventReasonCauseBreakerOpened && ev.Regarding.Name == "roll" && contains(ev.Note, "driver 580.65.06") {
				return true, nil
			}
		}
		return false, nil
	})

	// A first-wave replacement comes back with the same fault.
	h.breakGPU(repls[0], "replace")
	h.waitHeldByCause(append(wave2, repls[0])...)

	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
		v1alpha1.AnnotationCauseBreakersClosedAt: time.Now().UTC().Add(time.Second).Format(time.RFC3339)}}})
	if err := h.c.Patch(t.Context(), &v1alpha1.RemediationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "roll"}}, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}
	for _, n := range append(wave2, repls[0]) {
		h.waitLatestPhase(n, v1alpha1.PhaseSucceeded, 90*time.Second)
	}
	h.waitFor("the closed breaker gone from the policy's status", 10*time.Second, func() (bool, error) {
		err := h.c.Get(t.Context(), client.ObjectKey{Name: "roll"}, &pol)
		return len(pol.Status.CauseBreakers) == 0, err
	})
}
