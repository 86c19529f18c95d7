package score

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var day0 = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

func inc(id string, day int, machine, node string, class Class, gpus ...string) Incident {
	return Incident{ID: id, Time: day0.Add(time.Duration(day) * 24 * time.Hour), Machine: machine, Node: node, GPUs: gpus, Class: class}
}

func ids(l Lemon) []string {
	var out []string
	for _, in := range l.Incidents {
		out = append(out, in.ID)
	}
	return out
}

// A third hardware incident on one machine within 30 days makes it a lemon,
// whatever the node was called; workload crashes and incidents outside the
// window do not count.
func TestLemonCheckCountsTheMachineNotTheNodeName(t *testing.T) {
	r := DefaultLemonRule()
	history := []Incident{
		inc("a", 0, "m-1", "node-a", ClassReboot),
		inc("old", -40, "m-1", "node-a", ClassReboot),          // outside the window
		inc("app", 2, "m-1", "node-a", ClassRestartApp),        // the workload's fault
		inc("other", 3, "m-2", "node-b", ClassReplace),         // another machine
		inc("renamed", 5, "m-1", "node-a-renamed", ClassFatal), // same board, new name
	}
	next := inc("c", 10, "m-1", "node-a-renamed", ClassResetGPU)
	l, ok := r.Check(history, next)
	if !ok {
		t.Fatal("third hardware incident on m-1 within 30 days: not a lemon")
	}
	if diff := cmp.Diff([]string{"a", "renamed", "c"}, ids(l)); diff != "" {
		t.Errorf("evidence (-want +got):\n%s", diff)
	}
	if l.Machine != "m-1" || l.GPU != "" || l.Node != "node-a-renamed" {
		t.Errorf("lemon %+v", l)
	}

	// A replacement is new hardware: the old name's history is not its own.
	if _, ok := r.Check(history, inc("d", 10, "m-3", "node-a", ClassReboot)); ok {
		t.Error("a new machine under an old node name inherited its history")
	}
	// A warning is not a repair.
	if _, ok := r.Check(history, inc("w", 10, "m-1", "node-a", ClassWarning)); ok {
		t.Error("a warning made a lemon")
	}
}

// When one GPU is behind every incident, the lemon names it; when the
// incidents name different GPUs, or none, the machine is the offender.
func TestLemonNamesTheOneGPUBehindItsIncidents(t *testing.T) {
	r := LemonRule{Incidents: 2, Window: 7 * 24 * time.Hour}
	history := []Incident{inc("a", 0, "m-1", "n", ClassResetGPU, "GPU-7"), inc("x", 0, "m-2", "n2", ClassResetGPU, "GPU-1")}
	l, ok := r.Check(history, inc("b", 1, "m-1", "n", ClassResetGPU, "GPU-7"))
	if !ok || l.GPU != "GPU-7" || len(l.Incidents) != 2 {
		t.Fatalf("repeat GPU-7: %+v, %v", l, ok)
	}
	l, ok = r.Check(history, inc("c", 1, "m-1", "n", ClassReboot, "GPU-3"))
	if !ok || l.GPU != "" {
		t.Fatalf("GPU-7 then GPU-3: %+v, %v", l, ok)
	}
	// The same UUID on another machine is not this machine's history.
	if _, ok := r.Check(history, inc("d", 1, "m-3", "n3", ClassResetGPU, "GPU-7")); ok {
		t.Fatal("a GPU UUID carried history across machines")
	}
}

func TestLemonFindListsEveryOffenderWithEvidence(t *testing.T) {
	r := DefaultLemonRule()
	history := []Incident{
		inc("a1", 1, "m-1", "n1", ClassReboot), inc("a2", 4, "m-1", "n1", ClassReboot), inc("a3", 9, "m-1", "n1", ClassReplace),
		inc("b1", 1, "m-2", "n2", ClassResetGPU, "GPU-b"), inc("b2", 2, "m-2", "n2", ClassResetGPU, "GPU-b"),
		inc("b3", 3, "m-2", "n2-renamed", ClassResetGPU, "GPU-b"),
		inc("c1", 1, "m-3", "n3", ClassReboot), inc("c2", 2, "m-3", "n3", ClassReboot), // two: not yet
	}
	got := r.Find(history, day0.Add(10*24*time.Hour))
	if len(got) != 2 || got[0].Machine != "m-1" || got[1].Machine != "m-2" {
		t.Fatalf("lemons %+v", got)
	}
	if diff := cmp.Diff([]string{"a1", "a2", "a3"}, ids(got[0])); diff != "" {
		t.Errorf("m-1 evidence (-want +got):\n%s", diff)
	}
	if got[1].GPU != "GPU-b" || got[1].Node != "n2-renamed" {
		t.Errorf("m-2: GPU %q node %q, want GPU-b on n2-renamed", got[1].GPU, got[1].Node)
	}
	// At day 32 the window starts at day 2: every machine has at most two left.
	if got := r.Find(history, day0.Add(32*24*time.Hour)); len(got) != 0 {
		t.Errorf("at day 32: %+v", got)
	}
}

func TestLemonRuleValidate(t *testing.T) {
	if err := DefaultLemonRule().Validate(); err != nil {
		t.Fatal(err)
	}
	if err := (LemonRule{Incidents: 1}).Validate(); err == nil {
		t.Fatal("incidents 1 and no window accepted")
	}
}
