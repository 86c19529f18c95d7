package remediation

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/audit"
	"github.com/gpuheal/gpuheal/internal/provider"
	"github.com/gpuheal/gpuheal/internal/provider/fake"
	"github.com/gpuheal/gpuheal/internal/provider/none"
)

// TestDryRunChangesNoNode: a dry-run policy decides and records, the Node
// and its pods stay exactly as they were, and leaving dry run lets the
// recorded incident act.
func TestDryRunChangesNoNode(t *testing.T) {
	e := newClockEnv(t)
	e.policy("dry", func(s *v1alpha1.RemediationPolicySpec) { s.DryRun = true })
	node := e.addNodes("dry", 2)[0]
	e.runPod("default", "trainer-0", node, nil)
	e.breakGPU(node, "replace")
	before, _ := e.node(node)
	e.step(2 * time.Minute)
	e.step(time.Hour)

	nr := e.only(node)
	c := meta.FindStatusCondition(nr.Status.Conditions, v1alpha1.ConditionDryRun)
	if want := "would cordon dry-0000, evict 1 pods (0 DaemonSet or mirror pods stay), then Replace it through provider kwok"; c == nil || c.Message != want {
		t.Errorf("dry-run plan %+v, want %q", c, want)
	}
	if nr.Status.Phase != v1alpha1.PhasePending || !nr.Status.DryRun || len(e.prov.Calls()) != 0 {
		t.Errorf("phase %s dryRun %v calls %v: want Pending, true, none", nr.Status.Phase, nr.Status.DryRun, e.prov.Calls())
	}
	if after, _ := e.node(node); after.ResourceVersion != before.ResourceVersion {
		t.Errorf("dry run changed the node: %+v %v", after.Spec, after.Annotations)
	}
	var pods corev1.PodList
	if err := e.c.List(e.ctx, &pods); err != nil || len(pods.Items) != 1 {
		t.Errorf("dry run touched pods: %v %v", err, pods.Items)
	}

	var pol v1alpha1.RemediationPolicy
	if err := e.c.Get(e.ctx, clientKey("dry"), &pol); err != nil {
		t.Fatal(err)
	}
	pol.Spec.DryRun = false
	if err := e.c.Update(e.ctx, &pol); err != nil {
		t.Fatal(err)
	}
	e.settle()
	if nr := e.only(node); nr.Status.Phase != v1alpha1.PhaseVerifying || nr.Status.DryRun {
		t.Errorf("phase %s dryRun %v after leaving dry run, want Verifying and false", nr.Status.Phase, nr.Status.DryRun)
	}
}

// TestBreakerHoldsThenMaxParallelPaces: with more nodes unhealthy than
// maxUnhealthy nothing starts and the policy says why, with one Event;
// once the breaker closes, incidents start at most maxParallel at a time.
// (The cache lagging behind admissions is TestBreakerAndMaxParallel's, on
// a real API server.)
func TestBreakerHoldsThenMaxParallelPaces(t *testing.T) {
	e := newClockEnv(t)
	twenty, two := intstr.FromString("20%"), intstr.FromInt32(2)
	e.policy("brk", func(s *v1alpha1.RemediationPolicySpec) { s.MaxUnhealthy, s.MaxParallel = &twenty, &two })
	nodes := e.addNodes("brk", 10)
	broken := nodes[:3] // 30% of 10 > 20%
	for _, n := range broken {
		e.breakGPU(n, "replace")
	}
	e.step(2 * time.Minute)
	loop := &policyStatusLoop{client: e.c, recorder: e.events, fleet: e.rems.fleet, slots: &e.rems.slots}
	loop.refresh(e.ctx)
	for _, n := range broken {
		nr := e.only(n)
		c := meta.FindStatusCondition(nr.Status.Conditions, v1alpha1.ConditionAdmitted)
		if nr.Status.Phase != v1alpha1.PhasePending || c == nil || c.Reason != v1alpha1.ReasonBreakerOpen {
			t.Fatalf("%s: phase %s, Admitted %+v; want held by the breaker", n, nr.Status.Phase, c)
		}
		if node, _ := e.node(n); node.Spec.Unschedulable {
			t.Fatalf("node %s cordoned while the breaker was open", n)
		}
	}
	var pol v1alpha1.RemediationPolicy
	if err := e.c.Get(e.ctx, clientKey("brk"), &pol); err != nil || !pol.Status.BreakerOpen || pol.Status.UnhealthyNodes != 3 {
		t.Fatalf("policy status %+v (%v), want the breaker open with 3 unhealthy", pol.Status, err)
	}
	if evs := e.events.find("brk", v1alpha1.EventReasonBreakerOpened); len(evs) != 1 {
		t.Errorf("BreakerOpened events %+v, want one", evs)
	}

	sixty := intstr.FromString("60%")
	pol.Spec.MaxUnhealthy = &sixty
	if err := e.c.Update(e.ctx, &pol); err != nil {
		t.Fatal(err)
	}
	e.step(5 * e.opts.Poll) // held incidents look again; the count is a second old
	active := 0
	for _, n := range broken {
		if e.only(n).Status.Phase.Active() {
			active++
		}
	}
	if active != 2 {
		t.Fatalf("%d incidents in flight once the breaker closed, want maxParallel's 2", active)
	}
	loop.refresh(e.ctx)
	if evs := e.events.find("brk", v1alpha1.EventReasonBreakerClosed); len(evs) != 1 {
		t.Errorf("BreakerClosed events %+v, want one", evs)
	}
}

// TestOptOutAndConflicts: an opted-out node and a node matched by two
// policies get no incident; the conflict is said once by an Event.
func TestOptOutAndConflicts(t *testing.T) {
	e := newClockEnv(t)
	e.policy("opt-a")
	e.policy("opt-b", func(s *v1alpha1.RemediationPolicySpec) {
		s.NodeSelector.MatchLabels = map[string]string{"pool": "shared"}
	})
	nodes := e.addNodes("opt", 3)
	optedOut, shared, control := nodes[0], nodes[1], nodes[2]
	e.editNode(optedOut, func(n *corev1.Node) {
		n.Annotations = map[string]string{v1alpha1.AnnotationRemediation: v1alpha1.RemediationDisabled}
	})
	e.editNode(shared, func(n *corev1.Node) { n.Labels["pool"] = "shared" })
	for _, n := range nodes {
		e.breakGPU(n, "reboot")
	}
	e.step(2 * time.Minute)
	e.step(time.Minute)
	if nr := e.only(control); !nr.Status.Phase.Active() {
		t.Errorf("control node's incident in phase %s, want under way", nr.Status.Phase)
	}
	for _, n := range []string{optedOut, shared} {
		if items := e.incidents(n); len(items) != 0 {
			t.Errorf("node %s got incident %s", n, items[0].Name)
		}
	}
	if evs := e.events.find(shared, v1alpha1.EventReasonPolicyConflict); len(evs) != 1 || !strings.Contains(evs[0].note, "opt-a,opt-b") {
		t.Errorf("PolicyConflict events %+v, want one naming both policies", evs)
	}
}

// TestOptingOutMidIncidentUncordons: an operator opts the node out while
// its drain is held; the incident ends and our cordon is undone.
func TestOptingOutMidIncidentUncordons(t *testing.T) {
	e := newClockEnv(t, pdbRefuses("default/critical-0"))
	e.policy("p")
	node := e.addNodes("gpu", 1)[0]
	e.runPod("default", "critical-0", node, nil)
	e.breakGPU(node, "reboot")
	e.step(2 * time.Minute)
	e.editNode(node, func(n *corev1.Node) { n.Annotations[v1alpha1.AnnotationRemediation] = v1alpha1.RemediationDisabled })
	e.settle()
	if nr := e.only(node); nr.Status.Phase != v1alpha1.PhaseCancelled || nr.Status.Reason != v1alpha1.ReasonOptedOut {
		t.Fatalf("phase %s reason %s, want Cancelled/OptedOut", nr.Status.Phase, nr.Status.Reason)
	}
	if n, _ := e.node(node); n.Spec.Unschedulable || hasTaint(n) {
		t.Error("node still cordoned after opting out")
	}
}

// TestPausedPolicyHoldsUntilResumed.
func TestPausedPolicyHoldsUntilResumed(t *testing.T) {
	e := newClockEnv(t)
	e.policy("p", func(s *v1alpha1.RemediationPolicySpec) { s.Paused = true })
	node := e.addNodes("gpu", 1)[0]
	e.breakGPU(node, "reboot")
	e.step(2 * time.Minute)
	e.step(time.Hour)
	nr := e.only(node)
	if c := meta.FindStatusCondition(nr.Status.Conditions, v1alpha1.ConditionAdmitted); nr.Status.Phase != v1alpha1.PhasePending || c == nil || c.Reason != v1alpha1.ReasonPaused {
		t.Fatalf("phase %s, Admitted %+v; want held Paused", nr.Status.Phase, c)
	}
	var pol v1alpha1.RemediationPolicy
	if err := e.c.Get(e.ctx, clientKey("p"), &pol); err != nil {
		t.Fatal(err)
	}
	pol.Spec.Paused = false
	if err := e.c.Update(e.ctx, &pol); err != nil {
		t.Fatal(err)
	}
	e.settle()
	if nr := e.only(node); nr.Status.Phase != v1alpha1.PhaseVerifying {
		t.Errorf("phase %s once resumed, want Verifying", nr.Status.Phase)
	}
}

// TestProviderOutageDelaysTheRepair: the cloud API fails 4 calls. The
// controller waits 5 polls, then twice as long each time, measured on the
// clock, and finishes the same incident once the API is back.
func TestProviderOutageDelaysTheRepair(t *testing.T) {
	e := newClockEnv(t)
	e.policy("p")
	node := e.addNodes("gpu", 1)[0]
	outage := errors.New("kwok reboot: simulated provider failure: the simulated cloud API is down")
	e.prov.SetNextErrors(outage, 4)
	e.breakGPU(node, "reboot")
	e.step(2 * time.Minute)
	for i := 1; i <= 4; i++ {
		if calls := e.prov.CallsTo(fake.MethodReboot); len(calls) != i {
			t.Fatalf("after %d failures: %d Reboot calls", i-1, len(calls))
		}
		wait := providerBackoff(e.opts.Poll, i, e.only(node).Name)
		e.step(wait - time.Millisecond)
		if calls := e.prov.CallsTo(fake.MethodReboot); len(calls) != i {
			t.Fatalf("called again %v after failure %d, before the %v backoff", wait-time.Millisecond, i, wait)
		}
		e.step(time.Millisecond)
	}
	nr := e.only(node)
	failed, ok := 0, 0
	for _, r := range nr.Status.ProviderRequests {
		if r.Error != "" {
			failed++
		} else {
			ok++
		}
	}
	if nr.Status.Phase != v1alpha1.PhaseVerifying || failed != 4 || ok != 1 {
		t.Errorf("phase %s, %d failed and %d successful requests; want Verifying, 4 and 1", nr.Status.Phase, failed, ok)
	}
	if evs := e.events.find(nr.Name, v1alpha1.ReasonProviderError); len(evs) != 4 {
		t.Errorf("%d ProviderError events, want 4", len(evs))
	}
}

// TestProviderErrorsFailTheIncidentAtLast: an outage longer than
// maxProviderErrors calls (about 15 minutes) fails the incident and leaves
// the node cordoned.
func TestProviderErrorsFailTheIncidentAtLast(t *testing.T) {
	e := newClockEnv(t)
	e.policy("p")
	node := e.addNodes("gpu", 1)[0]
	e.prov.SetNextErrors(errors.New("down"), maxProviderErrors)
	e.breakGPU(node, "reboot")
	e.step(2 * time.Minute)
	name := e.only(node).Name
	for i := 1; i < maxProviderErrors; i++ {
		e.step(providerBackoff(e.opts.Poll, i, name))
	}
	nr := e.only(node)
	if nr.Status.Phase != v1alpha1.PhaseFailed || nr.Status.Reason != v1alpha1.ReasonProviderError {
		t.Fatalf("phase %s reason %s, want Failed/ProviderError after %d errors", nr.Status.Phase, nr.Status.Reason, maxProviderErrors)
	}
	if n, _ := e.node(node); !n.Spec.Unschedulable {
		t.Error("node not left cordoned")
	}
}

// TestProviderThatCannotActLeavesTheNodeCordoned: with the none provider
// a reboot escalates to a replacement, which none cannot do either; the
// incident fails and the node stays cordoned and drained for a person.
func TestProviderThatCannotActLeavesTheNodeCordoned(t *testing.T) {
	e := newClockEnv(t)
	e.opts.Providers[provider.None] = none.New()
	e.restart()
	e.policy("p", func(s *v1alpha1.RemediationPolicySpec) { s.Provider = provider.None })
	node := e.addNodes("gpu", 1)[0]
	e.runPod("default", "job-0", node, nil)
	e.breakGPU(node, "reboot")
	e.step(2 * time.Minute)
	nr := e.only(node)
	if nr.Status.Phase != v1alpha1.PhaseFailed || nr.Status.Reason != v1alpha1.ReasonUnsupported || nr.Status.Action != v1alpha1.ActionReplace {
		t.Errorf("phase %s reason %s action %s, want Failed/Unsupported after escalating to Replace", nr.Status.Phase, nr.Status.Reason, nr.Status.Action)
	}
	if got := fmt.Sprint(phasesOf(nr)); !strings.Contains(got, "Rebooting") || !strings.Contains(got, "Replacing") {
		t.Errorf("phases %s, want a reboot attempt then a replace attempt", got)
	}
	n, _ := e.node(node)
	if !n.Spec.Unschedulable || !hasTaint(n) || n.Annotations[v1alpha1.AnnotationCordonedBy] != nr.Name || len(nr.Status.EvictedPods) != 1 {
		t.Errorf("node not left cordoned and drained by %s: %+v %v, evicted %v", nr.Name, n.Spec, n.Annotations, nr.Status.EvictedPods)
	}
}

// TestProviderRefusalFailsAtOnce: a provider that refuses to delete the
// machine a node points at (its status names another node) is not retried;
// the incident fails with its own reason, an Event and an audit record say
// why, and the node stays cordoned for a person.
func TestProviderRefusalFailsAtOnce(t *testing.T) {
	e := newClockEnv(t)
	e.policy("p")
	node := e.addNodes("gpu", 1)[0]
	e.prov.SetNextErrors(fmt.Errorf("node %s points at NodeClaim claim-victim: %w", node, provider.ErrNotOwned), 3)
	e.breakGPU(node, "replace")
	e.step(2 * time.Minute)
	e.step(time.Hour)
	nr := e.only(node)
	if nr.Status.Phase != v1alpha1.PhaseFailed || nr.Status.Reason != v1alpha1.ReasonNotOwned {
		t.Fatalf("phase %s reason %s, want Failed/%s", nr.Status.Phase, nr.Status.Reason, v1alpha1.ReasonNotOwned)
	}
	if calls := e.prov.CallsTo(fake.MethodReplace); len(calls) != 1 {
		t.Errorf("%d Replace calls, want 1: a refusal is not retried", len(calls))
	}
	if evs := e.events.find(nr.Name, v1alpha1.ReasonNotOwned); len(evs) != 1 || !strings.Contains(evs[0].note, "claim-victim") {
		t.Errorf("events %+v, want one %s naming claim-victim", evs, v1alpha1.ReasonNotOwned)
	}
	found := false
	for _, r := range e.audit.Records() {
		if r.Kind == audit.ProviderError && r.Reason == v1alpha1.ReasonNotOwned && strings.Contains(r.Message, "claim-victim") {
			found = true
		}
	}
	if !found {
		t.Errorf("no %s audit record with reason %s in %+v", audit.ProviderError, v1alpha1.ReasonNotOwned, e.audit.Records())
	}
	if n, _ := e.node(node); !n.Spec.Unschedulable {
		t.Error("node not left cordoned")
	}
}

// TestEventNotesAreTerminalSafe: text others wrote (a condition message,
// a provider's error) reaches the controller's Events without terminal
// escape sequences; kubectl shows those notes on terminals.
func TestEventNotesAreTerminalSafe(t *testing.T) {
	e := newClockEnv(t)
	e.policy("p")
	node := e.addNodes("gpu", 1)[0]
	e.prov.SetNextError(errors.New("cloud down\x1b]0;owned\x07\x1b[2J\r"))
	e.breakGPU(node, "reboot")
	e.setCondition(node, gpuCondition, corev1.ConditionFalse, "NvidiaXID79Error", "GPU 3 fell off\x1b[8m hidden")
	e.step(2 * time.Minute)
	nr := e.only(node)
	evs := e.events.find(nr.Name, v1alpha1.ReasonProviderError)
	if len(evs) == 0 {
		t.Fatal("no ProviderError event")
	}
	e.events.mu.Lock()
	defer e.events.mu.Unlock()
	for _, ev := range e.events.events {
		if strings.ContainsAny(ev.note, "\x1b\x07\r") {
			t.Errorf("event %s on %s keeps control characters: %q", ev.reason, ev.object, ev.note)
		}
	}
}
