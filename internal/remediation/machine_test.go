package remediation

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/audit"
	"github.com/gpuheal/gpuheal/internal/provider/fake"
)

// The state machine on a fake clock: each test steps through a policy's
// durations (the CRD's defaults: 2m before an incident opens, a 15m reboot
// timeout, a 30m replace timeout) in milliseconds.

func TestIncidentOpensOnlyAfterThePolicysDuration(t *testing.T) {
	e := newClockEnv(t)
	e.policy("p")
	node := e.addNodes("gpu", 1)[0]
	e.breakGPU(node, "replace")
	e.settle()
	if n := len(e.incidents(node)); n != 0 {
		t.Fatalf("%d incidents right away, want none before the 2m the policy asks", n)
	}
	res, err := e.nodes.Reconcile(e.ctx, reqFor(node))
	if err != nil || res.RequeueAfter != 2*time.Minute {
		t.Errorf("node reconcile = %+v, %v; want to look again in 2m", res, err)
	}
	e.step(2*time.Minute - time.Second)
	if n := len(e.incidents(node)); n != 0 {
		t.Fatalf("%d incidents a second early", n)
	}
	e.step(time.Second)
	nr := e.only(node)
	if nr.Spec.Trigger.RecommendedAction != "replace" || nr.Status.Action != v1alpha1.ActionReplace {
		t.Errorf("trigger advice %q, action %s; want the agent's replace", nr.Spec.Trigger.RecommendedAction, nr.Status.Action)
	}
	if len(e.events.find(node, v1alpha1.EventReasonIncidentOpened)) != 1 {
		t.Errorf("want one %s Event on the node, got %+v", v1alpha1.EventReasonIncidentOpened, e.events.events)
	}
}

func TestReplaceDrainsAndReplaces(t *testing.T) {
	e := newClockEnv(t)
	e.policy("p")
	node := e.addNodes("gpu", 1)[0]
	e.runPod("default", "trainer-0", node, nil)
	e.runPod("default", "dcgm-exporter-0", node, nil)
	e.editPod("default", "dcgm-exporter-0", func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "dcgm-exporter",
			UID: "0b8c3d4e-0000-4000-8000-000000000001", Controller: ptr.To(true)}}
	})
	e.breakGPU(node, "replace")
	e.step(2 * time.Minute)

	nr := e.only(node)
	if nr.Status.Phase != v1alpha1.PhaseVerifying {
		t.Fatalf("phase %s (%s), want Verifying once the replacement is asked for", nr.Status.Phase, nr.Status.Message)
	}
	calls := e.prov.CallsTo(fake.MethodReplace)
	if len(calls) != 1 || calls[0].Token != nr.Name+"-1" {
		t.Fatalf("Replace calls %+v, want one with token %s-1", calls, nr.Name)
	}
	n, _ := e.node(node)
	if !n.Spec.Unschedulable || !hasTaint(n) || n.Annotations[v1alpha1.AnnotationCordonedBy] != nr.Name {
		t.Errorf("node not cordoned by %s: %+v %v", nr.Name, n.Spec, n.Annotations)
	}

	e.replaceMachine(node, "new")
	e.step(e.opts.Poll)
	nr = e.only(node)
	want := []v1alpha1.Phase{v1alpha1.PhasePending, v1alpha1.PhaseCordoned, v1alpha1.PhaseDraining,
		v1alpha1.PhaseDrained, v1alpha1.PhaseReplacing, v1alpha1.PhaseVerifying, v1alpha1.PhaseSucceeded}
	if diff := cmp.Diff(want, phasesOf(nr)); diff != "" {
		t.Errorf("phases (-want +got):\n%s", diff)
	}
	if nr.Status.Reason != v1alpha1.ReasonReplaced || nr.Status.Replacement != "new-0000" {
		t.Errorf("reason %s replacement %q, want Replaced by new-0000", nr.Status.Reason, nr.Status.Replacement)
	}
	if !slices.Equal(nr.Status.EvictedPods, []string{"default/trainer-0"}) {
		t.Errorf("evicted %v, want only default/trainer-0 (DaemonSet pods stay)", nr.Status.EvictedPods)
	}
	var kinds []audit.Kind
	recs := e.audit.Records()
	for _, r := range recs {
		kinds = append(kinds, r.Kind)
	}
	wantKinds := []audit.Kind{audit.Decided, audit.Cordoned, audit.Evicted, audit.Drained,
		audit.ActionRequested, audit.Recovered, audit.Succeeded}
	if diff := cmp.Diff(wantKinds, kinds[1:]); kinds[0] != audit.Detected || diff != "" {
		t.Errorf("audit records %v: want Detected, then (-want +got):\n%s", kinds, diff)
	}
	if last := recs[len(recs)-1]; last.Duration != 2*time.Minute+e.opts.Poll {
		t.Errorf("Succeeded after %v, want the fake clock's 2m%v since the condition turned", last.Duration, e.opts.Poll)
	}
	if got := recs[0].GPUs; len(got) != 1 {
		t.Errorf("Detected names GPUs %v, want the one in the agent's message", got)
	}
}

func TestRebootHealsAfterTheRecoveryHold(t *testing.T) {
	e := newClockEnv(t)
	e.policy("p")
	node := e.addNodes("gpu", 1)[0]
	e.breakGPU(node, "reboot")
	e.step(2 * time.Minute)
	if calls := e.prov.CallsTo(fake.MethodReboot); len(calls) != 1 {
		t.Fatalf("Reboot calls %+v, want one", calls)
	}
	e.healGPU(node) // the machine came back healthy
	e.step(30 * time.Second)
	if nr := e.only(node); nr.Status.Phase != v1alpha1.PhaseVerifying {
		t.Fatalf("phase %s within the 1m recovery hold, want Verifying", nr.Status.Phase)
	}
	e.step(30 * time.Second)
	nr := e.only(node)
	if nr.Status.Phase != v1alpha1.PhaseSucceeded || nr.Status.Reason != v1alpha1.ReasonRecovered {
		t.Fatalf("phase %s reason %s, want Succeeded/Recovered after the hold", nr.Status.Phase, nr.Status.Reason)
	}
	n, _ := e.node(node)
	if n.Spec.Unschedulable || hasTaint(n) || n.Annotations[v1alpha1.AnnotationCordonedBy] != "" {
		t.Errorf("node still cordoned after a healing reboot: %+v %v", n.Spec, n.Annotations)
	}
}

func TestRebootThatDoesNotHealEscalatesAfterTheRebootTimeout(t *testing.T) {
	e := newClockEnv(t)
	e.policy("p")
	node := e.addNodes("gpu", 1)[0]
	e.breakGPU(node, "reboot")
	e.step(2 * time.Minute)
	e.step(15*time.Minute - time.Second)
	if calls := e.prov.CallsTo(fake.MethodReplace); len(calls) != 0 {
		t.Fatalf("replaced %v before the 15m reboot timeout", calls)
	}
	e.step(time.Second)
	nr := e.only(node)
	var actions []v1alpha1.Action
	for _, r := range nr.Status.ProviderRequests {
		actions = append(actions, r.Action)
	}
	if !slices.Equal(actions, []v1alpha1.Action{v1alpha1.ActionReboot, v1alpha1.ActionReplace}) || nr.Status.Action != v1alpha1.ActionReplace {
		t.Errorf("provider actions %v, action %s; want [Reboot Replace] and Replace", actions, nr.Status.Action)
	}
	if i := slices.Index(phasesOf(nr), v1alpha1.PhaseReplacing); i < 0 || nr.Status.Phases[i].Message == "" {
		t.Errorf("phases %v: want Replacing after the reboot", phasesOf(nr))
	}
	if calls := e.prov.CallsTo(fake.MethodReplace); len(calls) != 1 || calls[0].Token != nr.Name+"-2" {
		t.Errorf("Replace calls %+v, want one for attempt 2", calls)
	}
}

func TestReplaceThatNeverHappensFailsAfterTheReplaceTimeout(t *testing.T) {
	e := newClockEnv(t)
	e.policy("p")
	node := e.addNodes("gpu", 1)[0]
	e.breakGPU(node, "replace")
	e.step(2 * time.Minute)
	e.step(30 * time.Minute)
	if nr := e.only(node); nr.Status.Phase != v1alpha1.PhaseVerifying {
		t.Fatalf("phase %s at the 30m replace timeout, want still Verifying", nr.Status.Phase)
	}
	e.step(time.Second)
	nr := e.only(node)
	if nr.Status.Phase != v1alpha1.PhaseFailed || nr.Status.Reason != v1alpha1.ReasonReplaceTimeout {
		t.Fatalf("phase %s reason %s, want Failed/ReplaceTimeout", nr.Status.Phase, nr.Status.Reason)
	}
	if n, _ := e.node(node); !n.Spec.Unschedulable {
		t.Error("a failed incident must leave the node cordoned for an operator")
	}
}

func reqFor(name string) ctrlRequest { return ctrlRequest{NamespacedName: clientKey(name)} }

// TestBadAdviceIsSaidOnceAndIgnored: an annotation that is not a JSON
// object of known actions leaves the decision to the built-in mapping
// (reboot), with one Event on the node; it never stops the repair.
func TestBadAdviceIsSaidOnceAndIgnored(t *testing.T) {
	e := newClockEnv(t)
	e.policy("p")
	node := e.addNodes("gpu", 1)[0]
	e.breakGPU(node, "replace")
	e.editNode(node, func(n *corev1.Node) {
		n.Annotations[v1alpha1.AnnotationRecommendedActions] = "recommended action: replace"
	})
	e.step(2 * time.Minute)
	e.step(time.Minute)
	nr := e.only(node)
	if nr.Spec.Trigger.RecommendedAction != "" || nr.Status.Action != v1alpha1.ActionReboot || !nr.Status.Phase.Active() {
		t.Errorf("advice %q action %s phase %s; want none, the built-in Reboot, under way", nr.Spec.Trigger.RecommendedAction, nr.Status.Action, nr.Status.Phase)
	}
	if evs := e.events.find(node, v1alpha1.EventReasonBadRecommendation); len(evs) != 1 {
		t.Errorf("%s events %+v, want one", v1alpha1.EventReasonBadRecommendation, evs)
	}
}
