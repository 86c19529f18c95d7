package remediation

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"k8s.io/utils/ptr"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/provider"
)

// setDriver labels nodes with the driver version GPU feature discovery
// would publish, as a rollout does.
func (e *clockEnv) setDriver(version string, nodes ...string) {
	e.t.Helper()
	for _, n := range nodes {
		e.editNode(n, func(n *corev1.Node) { n.Labels[v1alpha1.LabelNvidiaDriverVersion] = version })
	}
}

func (e *clockEnv) admittedReason(node string) string {
	e.t.Helper()
	items := e.incidents(node)
	nr := items[len(items)-1]
	if c := meta.FindStatusCondition(nr.Status.Conditions, v1alpha1.ConditionAdmitted); c != nil {
		return c.Reason
	}
	return ""
}

// TestCorrelatedFaultHoldsItsCause: a driver rollout breaks three nodes at
// a time. The first wave is within maxPerCause (3) and is replaced; the
// second makes the cause one too many, so its breaker opens (an Event and
// a metric naming the cause, the cause on the policy's status), its
// incidents wait in Pending without touching the nodes, while a failure of
// another cause is remediated. A replacement that fails the same way
// counts against the same cause; the breaker stays open past the window
// until a person closes it with the annotation.
func TestCorrelatedFaultHoldsItsCause(t *testing.T) {
	e := newClockEnv(t)
	three := intstr.FromInt32(3)
	e.policy("fleet", func(s *v1alpha1.RemediationPolicySpec) { s.MaxParallel = &three })
	nodes := e.addNodes("gpu", 10)
	e.setDriver("570.86.15", nodes...)
	loop := &policyStatusLoop{client: e.c, recorder: e.events, fleet: e.rems.fleet, slots: &e.rems.slots}

	wave1 := nodes[:3]
	e.setDriver("580.65.06", wave1...)
	for _, n := range wave1 {
		e.breakGPU(n, "replace")
	}
	e.step(2 * time.Minute)
	var repls []string
	for i, n := range wave1 {
		if nr := e.only(n); nr.Status.Phase != v1alpha1.PhaseVerifying {
			t.Fatalf("first wave %s in %s (%s), want its replacement requested", n, nr.Status.Phase, nr.Status.Message)
		}
		repl := "new" + string(rune('a'+i))
		e.replaceMachine(n, repl)
		e.setDriver("580.65.06", repl+"-0000")
		repls = append(repls, repl+"-0000")
	}
	e.step(e.opts.Poll)
	for _, n := range wave1 {
		if nr := e.only(n); nr.Status.Phase != v1alpha1.PhaseSucceeded {
			t.Fatalf("first wave %s in %s, want Succeeded", n, nr.Status.Phase)
		}
	}

	e.step(10 * time.Minute)
	wave2 := nodes[3:6]
	e.setDriver("580.65.06", wave2...)
	for _, n := range wave2 {
		e.breakGPU(n, "replace")
	}
	other := nodes[6] // still on the old driver: another cause
	e.breakGPU(other, "replace")
	e.step(2 * time.Minute)
	for _, n := range wave2 {
		if r := e.admittedReason(n); r != v1alpha1.ReasonCauseBreakerOpen {
			t.Errorf("second wave %s: Admitted reason %q, want %s", n, r, v1alpha1.ReasonCauseBreakerOpen)
		}
		if node, _ := e.node(n); node.Spec.Unschedulable {
			t.Errorf("second wave %s cordoned while its cause's breaker is open", n)
		}
	}
	if nr := e.only(other); nr.Status.Phase != v1alpha1.PhaseVerifying {
		t.Errorf("another cause's incident in %s (%s), want it remediated", nr.Status.Phase, nr.Status.Message)
	}
	var pol v1alpha1.RemediationPolicy
	if err := e.c.Get(e.ctx, clientKey("fleet"), &pol); err != nil {
		t.Fatal(err)
	}
	if len(pol.Status.CauseBreakers) != 1 {
		t.Fatalf("cause breakers %+v, want one", pol.Status.CauseBreakers)
	}
	b := pol.Status.CauseBreakers[0]
	want := v1alpha1.Cause{Condition: gpuCondition + "/NvidiaXID79Error", DriverVersion: "580.65.06"}
	if b.Cause != want || b.Nodes < 4 {
		t.Errorf("breaker %+v, want cause %+v with at least 4 nodes", b, want)
	}
	evs := e.events.find("fleet", v1alpha1.EventReasonCauseBreakerOpened)
	if len(evs) != 1 || !contains(evs[0].note, "driver 580.65.06") || !contains(evs[0].note, b.ID) {
		t.Errorf("CauseBreakerOpened events %+v, want one naming the driver and cause %s", evs, b.ID)
	}
	metric := causeBreakerOpen.WithLabelValues("fleet", b.ID, want.Condition, want.DriverVersion, "", "", "", "")
	if v := testutil.ToFloat64(metric); v != 1 {
		t.Errorf("gpuheal_cause_breaker_open = %v, want 1", v)
	}

	// A replacement from the first wave fails the same way: same cause, held.
	e.breakGPU(repls[0], "replace")
	e.step(2 * time.Minute)
	if r := e.admittedReason(repls[0]); r != v1alpha1.ReasonCauseBreakerOpen {
		t.Errorf("replacement %s failing the same way: Admitted reason %q, want %s", repls[0], r, v1alpha1.ReasonCauseBreakerOpen)
	}
	// The window passes: the breaker waits for a person all the same.
	e.step(2 * time.Hour)
	loop.refresh(e.ctx)
	for _, n := range append(wave2, repls[0]) {
		if items := e.incidents(n); items[len(items)-1].Status.Phase != v1alpha1.PhasePending {
			t.Errorf("%s in %s after the window, want still held", n, items[len(items)-1].Status.Phase)
		}
	}

	if err := e.c.Get(e.ctx, clientKey("fleet"), &pol); err != nil {
		t.Fatal(err)
	}
	pol.Annotations = map[string]string{v1alpha1.AnnotationCauseBreakersClosedAt: e.clock.Now().UTC().Format(time.RFC3339)}
	if err := e.c.Update(e.ctx, &pol); err != nil {
		t.Fatal(err)
	}
	loop.refresh(e.ctx)
	if err := e.c.Get(e.ctx, clientKey("fleet"), &pol); err != nil || len(pol.Status.CauseBreakers) != 0 {
		t.Errorf("cause breakers %+v (%v) after closing, want none", pol.Status.CauseBreakers, err)
	}
	if evs := e.events.find("fleet", v1alpha1.EventReasonCauseBreakerClosed); len(evs) != 1 {
		t.Errorf("CauseBreakerClosed events %+v, want one", evs)
	}
	if n := testutil.CollectAndCount(causeBreakerOpen, "gpuheal_cause_breaker_open"); n != 0 {
		t.Errorf("%d gpuheal_cause_breaker_open series after closing, want none", n)
	}
	e.step(5 * e.opts.Poll)
	active := 0
	for _, n := range append(wave2, repls[0]) {
		items := e.incidents(n)
		if items[len(items)-1].Status.Phase.Active() {
			active++
		} else if r := e.admittedReason(n); r != v1alpha1.ReasonMaxParallel {
			t.Errorf("%s held for %s once the breaker was closed, want started or waiting for a slot", n, r)
		}
	}
	if active != 3 {
		t.Errorf("%d of the four held incidents started once the breaker was closed, want maxParallel's 3", active)
	}
}

// TestReplacementMustBeHealthyToSucceed: the old node being gone and its
// replacement Ready is not enough. A replacement whose agent has not
// reported yet, or reports the same fault, keeps the incident Verifying
// (and then fails it at the timeout); one healthy for the recovery hold
// ends it Succeeded.
func TestReplacementMustBeHealthyToSucceed(t *testing.T) {
	for _, tc := range []struct {
		name   string
		report func(e *clockEnv, repl string)
		want   v1alpha1.Phase
	}{
		{"agent silent", func(*clockEnv, string) {}, v1alpha1.PhaseFailed},
		{"same fault", func(e *clockEnv, repl string) {
			e.setCondition(repl, gpuCondition, corev1.ConditionFalse, "NvidiaXID79Error", xidMessage)
		}, v1alpha1.PhaseFailed},
		{"healthy", func(e *clockEnv, repl string) { e.healGPU(repl) }, v1alpha1.PhaseSucceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newClockEnv(t)
			e.policy("p")
			node := e.addNodes("gpu", 1)[0]
			e.breakGPU(node, "replace")
			e.step(2 * time.Minute)
			if err := e.c.Delete(e.ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}); err != nil {
				t.Fatal(err)
			}
			repl := e.addNodes("new", 1)[0] // Ready, no GPU condition yet
			e.prov.SetStatus(node, providerGone(repl))
			e.step(e.opts.Poll)
			tc.report(e, repl)
			e.step(e.opts.Poll)
			if nr := e.only(node); nr.Status.Phase != v1alpha1.PhaseVerifying {
				t.Fatalf("phase %s (%s) with the replacement just up, want Verifying", nr.Status.Phase, nr.Status.Message)
			}
			e.step(time.Minute) // the recovery hold
			e.step(30 * time.Minute)
			if nr := e.only(node); nr.Status.Phase != tc.want {
				t.Errorf("phase %s (%s), want %s", nr.Status.Phase, nr.Status.Message, tc.want)
			}
		})
	}
}

func providerGone(repl string) provider.InstanceStatus {
	return provider.InstanceStatus{State: provider.StateGone, Replacement: repl}
}

// TestOneFlappingNodeOpensNoCauseBreaker: a node whose condition flips
// again and again (a flaky board, or an agent that flips its own
// condition) opens an incident per transition, but it is one node: the
// breaker counts nodes, so a cause the whole fleet shares stays open to
// the others.
func TestOneFlappingNodeOpensNoCauseBreaker(t *testing.T) {
	e := newClockEnv(t)
	e.policy("fleet", func(s *v1alpha1.RemediationPolicySpec) {
		// Neither the escalation nor the lemon rule may replace the
		// flapper: the test needs its incidents.
		s.Escalation.RebootsBeforeReplace = 10
		s.Lemon.Incidents = ptr.To[int32](0)
	})
	nodes := e.addNodes("gpu", 10)
	e.setDriver("580.65.06", nodes...)
	flapper := nodes[0]
	for range 5 {
		e.breakGPU(flapper, "reboot")
		e.step(2 * time.Minute)
		e.healGPU(flapper)
		e.step(2 * time.Minute)
	}
	if n := len(e.incidents(flapper)); n <= 3 {
		t.Fatalf("%d incidents on the flapping node, want more than maxPerCause (3) for the test to mean anything", n)
	}
	var pol v1alpha1.RemediationPolicy
	if err := e.c.Get(e.ctx, clientKey("fleet"), &pol); err != nil {
		t.Fatal(err)
	}
	if len(pol.Status.CauseBreakers) != 0 {
		t.Fatalf("cause breakers %+v opened by one node", pol.Status.CauseBreakers)
	}
	e.breakGPU(nodes[1], "reboot")
	e.step(2 * time.Minute)
	if r := e.admittedReason(nodes[1]); r == v1alpha1.ReasonCauseBreakerOpen {
		t.Errorf("another node of the same cause held by the breaker")
	}
}
