package soak

import (
	"slices"
	"testing"
	"time"

	gpuhealv1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/simfleet/schedule"
)

// The same seed plants the same latent faults, each a second before its
// carrier on the same GPU, and only on carriers.
func TestPlantLatentIsReproducibleAndRidesCarriers(t *testing.T) {
	var faults []schedule.ScheduledFault
	for i := range 200 {
		class := latentCarrier
		if i%3 == 0 {
			class = "hbm3-dbe"
		}
		faults = append(faults, schedule.ScheduledFault{At: time.Duration(i+1) * time.Minute, Slot: "n", Class: class, GPU: i % 8})
	}
	a, b := plantLatent(faults, 0.5, 7), plantLatent(faults, 0.5, 7)
	if !slices.Equal(a, b) {
		t.Fatal("one seed planted two different schedules")
	}
	if got := plantLatent(faults, 0, 7); !slices.Equal(got, faults) {
		t.Fatal("share 0 changed the schedule")
	}
	planted := 0
	for i, f := range a {
		if f.Class != latentClass {
			continue
		}
		planted++
		next := a[i+1]
		if next.Class != latentCarrier || next.GPU != f.GPU || next.Slot != f.Slot || next.At-f.At != time.Second {
			t.Fatalf("latent fault %+v not a second before its carrier, but before %+v", f, next)
		}
	}
	if carriers := 133; planted < carriers/4 || planted > carriers*3/4 {
		t.Fatalf("%d of %d carriers planted at share 0.5", planted, carriers)
	}
}

// A surfacing within the hour after the node's repair is a repeat, and the
// pods placed on it in between are counted; one long after, or on a node
// never repaired, is not. A failed check on a node without a latent fault
// is a false failure.
func TestGateFigures(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	repaired := incident("n1-a", "n1", t0, t0.Add(5*time.Minute), gpuhealv1.PhaseSucceeded)
	late := incident("n2-a", "n2", t0, t0.Add(5*time.Minute), gpuhealv1.PhaseSucceeded)
	gated := incident("n3-a", "n3", t0, t0.Add(9*time.Minute), gpuhealv1.PhaseSucceeded)
	gated.Status.Replacement = "n3-r1"
	gated.Status.Validation = []gpuhealv1.CheckResult{
		{Name: "nccl", Kind: gpuhealv1.CheckNCCL, Node: "n3", Outcome: gpuhealv1.CheckFailed},
		{Name: "nccl", Kind: gpuhealv1.CheckNCCL, Node: "n3-r1", Outcome: gpuhealv1.CheckPassed},
		{Name: "agent", Kind: gpuhealv1.CheckAgent, Node: "n4", Outcome: gpuhealv1.CheckError, Message: "no fresh report"},
		{Name: "nccl", Kind: gpuhealv1.CheckNCCL, Node: "n5"}, // still running
	}
	inj := []schedule.Injection{
		{Node: "n1", Class: latentClass, Time: t0},
		{Node: "n2", Class: latentClass, Time: t0},
		{Node: "n3", Class: latentClass, Time: t0},
		{Node: "n3", Class: latentClass, Time: t0, Skipped: "slot down"},
		{Node: "n1", Class: schedule.ClassSurfaced, Time: t0.Add(30 * time.Minute), Fatal: true},
		{Node: "n2", Class: schedule.ClassSurfaced, Time: t0.Add(3 * time.Hour), Fatal: true},
		{Node: "n6", Class: schedule.ClassSurfaced, Time: t0.Add(10 * time.Minute), Fatal: true},
	}
	placed := map[string]placement{
		"before": {node: "n1", at: t0.Add(time.Minute)},
		"after1": {node: "n1", at: t0.Add(6 * time.Minute)},
		"after2": {node: "n1", at: t0.Add(20 * time.Minute)},
		"other":  {node: "n2", at: t0.Add(6 * time.Minute)},
	}
	g := gateFigures(inj, []gpuhealv1.NodeRemediation{repaired, late, gated}, placed, 1)
	if g.LatentPlanted != 3 || g.ReturnedWithLatent != 2 || g.Repeats != 1 || g.PodsOnRepeats != 2 {
		t.Errorf("planted %d, returned to work %d, repeats %d, pods on them %d; want 3, 2 (n1, n2; n3 was replaced), 1, 2",
			g.LatentPlanted, g.ReturnedWithLatent, g.Repeats, g.PodsOnRepeats)
	}
	if g.Checks["NCCL Failed"] != 1 || g.Checks["NCCL Passed"] != 1 || g.Checks["Agent Error"] != 1 || len(g.Checks) != 3 {
		t.Errorf("checks %v", g.Checks)
	}
	if len(g.FalseFailures) != 1 || g.FalseFailures[0] != "agent on n4: Error no fresh report" {
		t.Errorf("false failures %q, want the agent check on n4", g.FalseFailures)
	}
	// At speed 10 the hour is six minutes of the run: n1's surfacing 25
	// minutes after its repair is no longer a repeat.
	if g := gateFigures(inj, []gpuhealv1.NodeRemediation{repaired}, placed, 10); g.Repeats != 0 {
		t.Errorf("speed 10: %d repeats, want 0", g.Repeats)
	}
}
