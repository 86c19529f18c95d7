package simfleet

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/agent"
	"github.com/gpuheal/gpuheal/internal/gpu/sim"
	"github.com/gpuheal/gpuheal/internal/simfleet/schedule"
)

// Faults land on distinct nodes: a node with a fatal fault gets no second
// one until its repair, and the draws repeat for a seed.
func TestSimFleetInjectsOneFatalFaultPerNode(t *testing.T) {
	o, tmpl := simFleetTestOptions("")
	f := newSimFleet(o, tmpl, nil, t.TempDir(), slog.New(slog.DiscardHandler))
	for _, name := range []string{"a", "b", "c"} {
		so := f.simOptions(name, 0, "")
		n, err := sim.New(so)
		if err != nil {
			t.Fatal(err)
		}
		f.agents[name] = &simAgent{name: name, node: n, fabric: so.Fabric}
	}
	for range 200 {
		f.injectOne()
	}
	for name, a := range f.agents {
		if !a.faulted() {
			t.Errorf("node %s never got a fatal fault in 200 draws", name)
		}
	}
}

// A schedule runs against slots: a replaced node's successor takes the
// fault, a slot with no machine up is journaled as skipped, and a
// restarted fleet goes on after the last journaled entry.
func TestSimFleetRunsTheScheduleBySlot(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/schedule.jsonl"
	sched := []schedule.ScheduledFault{
		{At: 0, Slot: "n-0", Class: "hbm3-dbe", GPU: 1},
		{At: 0, Slot: "n-9", Class: "faulty-gpu", GPU: 2},
		{At: time.Hour, Slot: "n-0", Class: "gsp-timeout", GPU: 0},
	}
	if err := schedule.WriteSchedule(path, sched); err != nil {
		t.Fatal(err)
	}
	o, tmpl := simFleetTestOptions("")
	o.ScheduleFile = path
	f := newSimFleet(o, tmpl, nil, dir, slog.New(slog.DiscardHandler))
	if err := f.loadSchedule(); err != nil {
		t.Fatal(err)
	}
	n, err := sim.New(sim.Options{NodeName: "n-0-r00beef", GPUs: 8})
	if err != nil {
		t.Fatal(err)
	}
	f.agents["n-0-r00beef"] = &simAgent{name: "n-0-r00beef", node: n}
	f.injectDue(f.epoch)
	got, err := schedule.ReadInjections(dir)
	if err != nil || len(got) != 2 {
		t.Fatalf("journal = %+v, %v", got, err)
	}
	if got[0].Node != "n-0-r00beef" || got[0].Skipped != "" || !got[0].Fatal || got[1].Skipped == "" {
		t.Errorf("journal = %+v; want the DBE on the replacement and n-9 skipped", got)
	}
	again := newSimFleet(o, tmpl, nil, dir, slog.New(slog.DiscardHandler))
	if err := again.loadSchedule(); err != nil || again.next != 2 {
		t.Fatalf("restarted fleet resumes at %d (%v); want 2", again.next, err)
	}

}

func simFleetTestOptions(kubeconfig string) (Options, agent.Options) {
	return Options{Enabled: true, NodeSelector: v1alpha1.LabelNvidiaGPUPresent + "=true", Resync: 100 * time.Millisecond, Seed: 1},
		agent.Options{
			Kubeconfig: kubeconfig, Backend: agent.BackendSim, Interval: time.Second, CallTimeout: 500 * time.Millisecond,
			KmsgPoll: 50 * time.Millisecond, Output: "text", GCPercent: 100,
			Sim: agent.SimOptions{GPUs: 8, Model: "H100-80GB-HBM3"},
		}
}

// A check's level comes from its dcgmi command line in any of its forms;
// a Job's pod name is stable per Job UID; managedBy picks the Jobs.
func TestCheckJobHelpers(t *testing.T) {
	for _, tc := range []struct {
		cmd  []string
		want int
	}{
		{[]string{"dcgmi", "diag", "-r", "3", "-j"}, 3},
		{[]string{"dcgmi", "diag", "--run=2"}, 2},
		{[]string{"/bin/sh", "-c", "dcgmi diag -r1 -j"}, 1},
		{[]string{"dcgmi", "diag", "-r", "long"}, 4},
		{nil, 4},
	} {
		var p simPod
		p.Spec.Containers = []podContainer{{Name: checkContainer, Command: tc.cmd}}
		if got := dcgmLevel(&p); got != tc.want {
			t.Errorf("%q: level %d, want %d", tc.cmd, got, tc.want)
		}
	}
	var a, b checkJob
	a.Name, a.UID = strings.Repeat("j", 63), "uid-1"
	b.Name, b.UID = a.Name, "uid-2"
	if pa := checkPodName(&a); len(pa) > 63 || pa == checkPodName(&b) || pa != checkPodName(&a) {
		t.Errorf("pod names %q and %q", pa, checkPodName(&b))
	}
	other := "example.com/other"
	f := &simFleet{opts: Options{CheckJobsManagedBy: "gpuheal.io/sim-fleet"}}
	if f.answers(&a) {
		t.Error("a fleet told to answer managedBy gpuheal.io/sim-fleet answered a Job of the built-in controller")
	}
	a.Spec.ManagedBy = &other
	if f.answers(&a) || !(&simFleet{}).answers(&a) {
		t.Error("managedBy filter wrong")
	}
}
