package simfleet

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

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
		n, err := sim.New(f.simOptions(name, 0))
		if err != nil {
			t.Fatal(err)
		}
		f.agents[name] = &simAgent{name: name, node: n}
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

// A fabric fault lands on the NIC of the drawn GPU's rail and is kept
// with the board's faults: the next boot of the machine has it again and
// is still faulted; its replacement (a new UID) comes clean.
func TestSimFleetFabricFaultOutlivesReboots(t *testing.T) {
	o, tmpl := simFleetTestOptions("")
	dir := t.TempDir()
	f := newSimFleet(o, tmpl, nil, dir, slog.New(slog.DiscardHandler))
	n, err := sim.New(f.simOptions("n-0", 0))
	if err != nil {
		t.Fatal(err)
	}
	a := &simAgent{name: "n-0", node: n, hardware: nodeFaults{Boot: "uid-1/"}, board: boardFaults{UID: "uid-1"}}
	f.agents["n-0"] = a
	class, _ := schedule.ClassNamed("network-switch-cable-down")
	f.injectLocked(a, class, 5, schedule.Injection{Slot: "n-0", Class: class.Name})
	want := []sim.Fault{{Kind: sim.KindFabricPortDown, GPU: 5, Params: map[string]string{"device": "5"}}}
	if diff := cmp.Diff(want, a.board.Faults); diff != "" || len(a.hardware.Faults) != 0 || !a.board.Faulted || a.board.latent() {
		t.Fatalf("board %+v (-want +got faults:\n%s), boot %+v", a.board, diff, a.hardware)
	}

	// The next boot: a new sim node, its boot's faults gone, the board's
	// restored as start restores them.
	board := f.loadBoard("n-0", "uid-1")
	next := &simAgent{name: "n-0", hardware: f.loadFaults("n-0", "uid-1/reboot-1"), board: board}
	if !next.faulted() || len(next.hardware.Faults) != 0 {
		t.Errorf("after a reboot: faulted %v, boot faults %v", next.faulted(), next.hardware.Faults)
	}
	n2, err := sim.New(f.simOptions("n-0", 1))
	if err != nil {
		t.Fatal(err)
	}
	for _, fault := range board.Faults {
		if err := n2.Inject(fault); err != nil {
			t.Fatal(err)
		}
	}
	s, err := n2.Snapshot(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if p := s.Fabric.Devices[5].Ports[0]; s.Fabric.Devices[5].Name != "mlx5_5" || p.State != "DOWN" {
		t.Errorf("after a reboot mlx5_5 is %s", p.State)
	}
	if repl := f.loadBoard("n-0", "uid-2"); len(repl.Faults) != 0 || repl.Faulted {
		t.Errorf("the replacement's board %+v", repl)
	}
}

// On a p5's EFA fabric the NIC of GPU 3's rail is device 12; a fabric
// without cables to pull (EFA) refuses a port down, journaled as skipped.
func TestSimFleetEFAFabric(t *testing.T) {
	o, tmpl := simFleetTestOptions("")
	o.Fabric = FabricEFA
	dir := t.TempDir()
	f := newSimFleet(o, tmpl, nil, dir, slog.New(slog.DiscardHandler))
	if got := f.fabricDevice(3); got != 12 {
		t.Errorf("device of GPU 3 = %d, want 12", got)
	}
	n, err := sim.New(f.simOptions("n-0", 0))
	if err != nil {
		t.Fatal(err)
	}
	a := &simAgent{name: "n-0", node: n, board: boardFaults{UID: "uid-1"}}
	for _, name := range []string{"network-switch-cable-down", "nic"} {
		class, _ := schedule.ClassNamed(name)
		f.injectLocked(a, class, 3, schedule.Injection{Slot: "n-0", Class: class.Name})
	}
	got, err := schedule.ReadInjections(dir)
	if err != nil || len(got) != 2 || !strings.Contains(got[0].Skipped, "EFA devices report a fixed port state") || got[1].Skipped != "" {
		t.Fatalf("journal %+v, %v", got, err)
	}
	if len(a.board.Faults) != 1 || a.board.Faults[0].Params["device"] != "12" {
		t.Errorf("board %+v", a.board)
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
