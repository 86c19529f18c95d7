package simfleet

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuheal/gpuheal/internal/fabric"
	"github.com/gpuheal/gpuheal/internal/gpu/sim"
	"github.com/gpuheal/gpuheal/internal/simfleet/schedule"
)

// A node gets the fabric its instance type has unless the fleet is told
// otherwise.
func TestSimFleetFabricFor(t *testing.T) {
	ib := sim.FabricOptions{Devices: 8, Kind: fabric.KindInfiniBand}
	for _, tc := range []struct {
		fleet, instanceType string
		want                sim.FabricOptions
	}{
		{"", "p5.48xlarge", sim.FabricOptions{Devices: 32, Kind: fabric.KindEFA}},
		{FabricAuto, "p5en.48xlarge", sim.FabricOptions{Devices: 16, Kind: fabric.KindEFA}},
		{"", "p4d.24xlarge", sim.FabricOptions{Devices: 4, Kind: fabric.KindEFA}},
		{"", "", ib},
		{"", "g6.xlarge", ib},
		{FabricInfiniBand, "p5.48xlarge", ib},
		{FabricEFA, "", sim.FabricOptions{Devices: 32, Kind: fabric.KindEFA}},
		{FabricNone, "p5.48xlarge", sim.FabricOptions{}},
	} {
		if got := (Options{Fabric: tc.fleet}).fabricFor(tc.instanceType); got != tc.want {
			t.Errorf("fleet %q, instance type %q: %+v, want %+v", tc.fleet, tc.instanceType, got, tc.want)
		}
	}
	o, tmpl := simFleetTestOptions("")
	o.Fabric = "omnipath"
	if err := o.Validate(tmpl); err == nil || err.Error() != `--sim-fleet-fabric "omnipath": want auto, infiniband, efa or none` {
		t.Errorf("Validate = %v", err)
	}
}

// fleetNode is a sim node of the fleet and its agent, as start makes them.
func fleetNode(t *testing.T, f *simFleet, name, instanceType string) *simAgent {
	t.Helper()
	so := f.simOptions(name, 0, instanceType)
	n, err := sim.New(so)
	if err != nil {
		t.Fatal(err)
	}
	a := &simAgent{name: name, node: n, fabric: so.Fabric, hardware: nodeFaults{Boot: "uid-1/"}, board: boardFaults{UID: "uid-1"}}
	f.agents[name] = a
	return a
}

// A fabric fault lands on the NIC of the drawn GPU's rail and is kept
// with the board's faults: the next boot of the machine has it again and
// is still faulted; its replacement (a new UID) comes clean.
func TestSimFleetFabricFaultOutlivesReboots(t *testing.T) {
	o, tmpl := simFleetTestOptions("")
	f := newSimFleet(o, tmpl, nil, t.TempDir(), slog.New(slog.DiscardHandler))
	a := fleetNode(t, f, "n-0", "")
	class, _ := schedule.ClassNamed("network-switch-cable-down")
	f.injectLocked(a, class, 5, schedule.Injection{Slot: "n-0", Class: class.Name})
	want := []sim.Fault{{Kind: sim.KindFabricPortDown, GPU: 5, Params: map[string]string{"device": "5"}}}
	if diff := cmp.Diff(want, a.board.Faults); diff != "" || len(a.hardware.Faults) != 0 || !a.board.Faulted || a.board.latent() {
		t.Fatalf("board %+v (-want +got faults:\n%s), boot %+v", a.board, diff, a.hardware)
	}

	// The next boot: a new sim node, the boot's faults gone, the board's
	// restored as start restores them.
	board := f.loadBoard("n-0", "uid-1")
	next := &simAgent{name: "n-0", hardware: f.loadFaults("n-0", "uid-1/reboot-1"), board: board}
	if !next.faulted() || len(next.hardware.Faults) != 0 {
		t.Errorf("after a reboot: faulted %v, boot faults %v", next.faulted(), next.hardware.Faults)
	}
	n2, err := sim.New(f.simOptions("n-0", 1, ""))
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
	if d := s.Fabric.Devices[5]; d.Name != "mlx5_5" || d.Ports[0].State != "DOWN" {
		t.Errorf("after a reboot %s is %s", d.Name, d.Ports[0].State)
	}
	if repl := f.loadBoard("n-0", "uid-2"); len(repl.Faults) != 0 || repl.Faulted {
		t.Errorf("the replacement's board %+v", repl)
	}
}

// On a p5's EFA fabric the device of GPU 3's rail is the 13th; a bad
// cable shows as EFA's error counters, not fatal, and a NIC gone is
// fatal as anywhere.
func TestSimFleetEFAFabric(t *testing.T) {
	o, tmpl := simFleetTestOptions("")
	dir := t.TempDir()
	f := newSimFleet(o, tmpl, nil, dir, slog.New(slog.DiscardHandler))
	a := fleetNode(t, f, "n-0", "p5.48xlarge")
	for _, name := range []string{"network-switch-cable-down", "network-switch-cable-flap"} {
		class, _ := schedule.ClassNamed(name)
		f.injectLocked(a, class, 3, schedule.Injection{Slot: "n-0", Class: class.Name})
	}
	if a.faulted() {
		t.Error("a bad cable on EFA made the node faulted")
	}
	class, _ := schedule.ClassNamed("nic")
	f.injectLocked(a, class, 7, schedule.Injection{Slot: "n-0", Class: class.Name})
	want := []sim.Fault{
		{Kind: sim.KindEFAErrors, GPU: 3, Params: map[string]string{"device": "12", "counter": "unresponsive_remote_events"}},
		{Kind: sim.KindEFAErrors, GPU: 3, Params: map[string]string{"device": "12", "counter": "retrans_timeout_events"}},
		{Kind: sim.KindFabricDeviceMissing, GPU: 7, Params: map[string]string{"device": "28"}},
	}
	if diff := cmp.Diff(want, a.board.Faults); diff != "" || !a.board.Faulted {
		t.Errorf("board faulted %v (-want +got):\n%s", a.board.Faulted, diff)
	}
	got, err := schedule.ReadInjections(dir)
	if err != nil || len(got) != 3 {
		t.Fatalf("journal %+v, %v", got, err)
	}
	var line []string
	for _, in := range got {
		line = append(line, in.Class+" "+string(in.Kind)+" "+map[bool]string{true: "fatal", false: "warning"}[in.Fatal]+in.Skipped)
	}
	if diff := cmp.Diff([]string{"network-switch-cable-down efa-errors warning", "network-switch-cable-flap efa-errors warning", "nic fabric-device-missing fatal"}, line); diff != "" {
		t.Errorf("journal (-want +got):\n%s", diff)
	}
	s, err := a.node.Snapshot(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range s.Fabric.Devices {
		names = append(names, d.Name)
	}
	if len(names) != 31 || strings.Contains(strings.Join(names, ","), "rdmap197s0") {
		t.Errorf("EFA devices after the NIC went: %v", names)
	}
}
