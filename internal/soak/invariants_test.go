package soak

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gpuhealv1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/simfleet/schedule"
)

func incident(name, node string, opened, ended time.Time, phase gpuhealv1.Phase) gpuhealv1.NodeRemediation {
	r := gpuhealv1.NodeRemediation{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(opened)}}
	r.Spec.NodeName = node
	r.Status.Phase = phase
	r.Status.Phases = []gpuhealv1.PhaseTransition{
		{Phase: gpuhealv1.PhasePending, Time: metav1.NewMicroTime(opened)},
		{Phase: phase, Time: metav1.NewMicroTime(ended)},
	}
	return r
}

// A second fault on a node whose open incident then succeeds is repaired
// by it; a fault after the incident ended, with none of its own, is not.
func TestFaultDuringAnOpenIncidentIsCovered(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	inj := []schedule.Injection{
		{Node: "n1", Time: t0, Fatal: true, Class: "nvlink-down"},
		{Node: "n1", Time: t0.Add(90 * time.Second), Fatal: true, Class: "faulty-gpu"},
		{Node: "n2", Time: t0, Fatal: true, Class: "hbm3-dbe"},
		{Node: "n2", Time: t0.Add(20 * time.Minute), Fatal: true, Class: "faulty-gpu"},
	}
	rems := []gpuhealv1.NodeRemediation{
		incident("n1-a", "n1", t0.Add(20*time.Second), t0.Add(17*time.Minute), gpuhealv1.PhaseSucceeded),
		incident("n2-a", "n2", t0.Add(20*time.Second), t0.Add(2*time.Minute), gpuhealv1.PhaseSucceeded),
	}
	inv, outcomes := faultsRemediatedOnce(inj, rems)
	if outcomes["covered by an open incident"] != 1 || outcomes["none"] != 1 || outcomes[string(gpuhealv1.PhaseSucceeded)] != 2 {
		t.Fatalf("outcomes %v, want 2 Succeeded, 1 covered, 1 none", outcomes)
	}
	if inv.OK {
		t.Fatalf("a fault with no incident passed: %s", inv.Detail)
	}
}

// An incident the cause breaker holds for a person is an explained
// refusal; one held for any other reason at the end is unfinished.
func TestCauseBreakerHoldIsAnExplainedRefusal(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	inj := []schedule.Injection{
		{Node: "n1", Time: t0, Fatal: true, Class: "faulty-gpu"},
		{Node: "n2", Time: t0, Fatal: true, Class: "faulty-gpu"},
	}
	held := func(name, node, reason string) gpuhealv1.NodeRemediation {
		r := incident(name, node, t0.Add(3*time.Second), t0.Add(3*time.Second), gpuhealv1.PhasePending)
		r.Status.Conditions = []metav1.Condition{{Type: gpuhealv1.ConditionAdmitted, Status: metav1.ConditionFalse,
			Reason: reason, Message: "the breaker of cause 6c197bf797 is open: 4 nodes failed"}}
		return r
	}
	inv, outcomes := faultsRemediatedOnce(inj[:1], []gpuhealv1.NodeRemediation{held("n1-a", "n1", gpuhealv1.ReasonCauseBreakerOpen)})
	if !inv.OK || outcomes["held by the cause breaker"] != 1 {
		t.Fatalf("cause-breaker hold: %v, %s", outcomes, inv.Detail)
	}
	inv, outcomes = faultsRemediatedOnce(inj[1:], []gpuhealv1.NodeRemediation{held("n2-a", "n2", gpuhealv1.ReasonMaxParallel)})
	if inv.OK || outcomes["unfinished"] != 1 {
		t.Fatalf("a maxParallel hold at the end passed: %v, %s", outcomes, inv.Detail)
	}
}

func TestGrowthJudgesTheTrendNotOneSample(t *testing.T) {
	series := func(n int, rss func(i int) int64, routines func(i int) int) []processSample {
		out := make([]processSample, n)
		for i := range out {
			out[i] = processSample{RSS: rss(i), Goroutines: routines(i)}
		}
		return out
	}
	const mb = 1 << 20
	steady := func(int) int { return 1200 }
	cases := []struct {
		name    string
		samples []processSample
		within  bool
	}{
		{"flat", series(60, func(int) int64 { return 400 * mb }, steady), true},
		{"GC swings of a third", series(60, func(i int) int64 { return int64(370+220*(i%2)) * mb }, steady), true},
		{"an outage at the end", series(60, func(int) int64 { return 400 * mb },
			func(i int) int { return map[bool]int{true: 1550, false: 1200}[i >= 55] }), true},
		{"memory climbing", series(60, func(i int) int64 { return int64(300+5*i) * mb }, steady), false},
		{"goroutines climbing", series(60, func(int) int64 { return 400 * mb }, func(i int) int { return 1200 + 10*i }), false},
	}
	for _, c := range cases {
		if got := growthOf(c.samples).within(); got != c.within {
			t.Errorf("%s: within=%v, want %v (%+v)", c.name, got, c.within, growthOf(c.samples))
		}
	}
}
