package sim

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	fakeclock "k8s.io/utils/clock/testing"

	"github.com/gpuheal/gpuheal/internal/detect"
	"github.com/gpuheal/gpuheal/internal/fabric"
	"github.com/gpuheal/gpuheal/internal/finding"
	"github.com/gpuheal/gpuheal/internal/xid"
)

// cableFaults put one of each InfiniBand fault on its own device.
var cableFaults = []Fault{
	{Kind: KindFabricPortDown, Params: params{"device": "0"}},
	{Kind: KindFabricLinkFlap, Params: params{"device": "1"}},
	{Kind: KindFabricSymbolErrors, Params: params{"device": "2"}},
	{Kind: KindFabricDegradedRate, Params: params{"device": "3"}},
	{Kind: KindFabricDeviceMissing, Params: params{"device": "4"}},
}

// fabricView is what the faults show: each port's state and rate, and its
// error counters; "missing" for a device not listed.
func fabricView(f *fabric.Snapshot) map[string]string {
	out := map[string]string{}
	for i := range 8 {
		out["mlx5_"+strconv.Itoa(i)] = "missing"
	}
	for _, d := range f.Devices {
		p := d.Ports[0]
		v := p.State + "/" + p.PhysState + " " + strconv.FormatFloat(*p.RateGbps, 'f', -1, 64)
		for _, k := range []string{"link_downed", "symbol_error"} {
			if c := faultCounts(p)[k]; c > 0 {
				v += " " + k + "=" + strconv.FormatUint(c, 10)
			}
		}
		out[d.Name] = v
	}
	return out
}

// A reboot fixes no fabric fault: the counters start over and each fault
// goes on. Only a new node (a replacement) comes without them.
func TestFabricRebootKeepsFaults(t *testing.T) {
	n, clk := newTestNode(t, ib8)
	for _, f := range cableFaults {
		if err := n.Inject(f); err != nil {
			t.Fatal(err)
		}
	}
	clk.Step(10 * time.Minute)
	before := snapshot(t, n)
	want := map[string]string{
		"mlx5_0": "DOWN/Polling 10 link_downed=1", "mlx5_1": "ACTIVE/LinkUp 400 link_downed=5",
		"mlx5_2": "ACTIVE/LinkUp 400 symbol_error=3000", "mlx5_3": "ACTIVE/LinkUp 200", "mlx5_4": "missing",
		"mlx5_5": "ACTIVE/LinkUp 400", "mlx5_6": "ACTIVE/LinkUp 400", "mlx5_7": "ACTIVE/LinkUp 400",
	}
	if diff := cmp.Diff(want, fabricView(before.Fabric)); diff != "" {
		t.Fatalf("before the reboot (-want +got):\n%s", diff)
	}
	logged := len(n.KernelLog(0))

	n.Reset()
	// Right after the reboot: the port never came up in this boot (no
	// link_downed), the flap starts over, the symbol errors count again.
	want["mlx5_0"], want["mlx5_1"], want["mlx5_2"] = "DOWN/Polling 10", "ACTIVE/LinkUp 400 link_downed=1", "ACTIVE/LinkUp 400"
	after := snapshot(t, n)
	if diff := cmp.Diff(want, fabricView(after.Fabric)); diff != "" {
		t.Errorf("right after the reboot (-want +got):\n%s", diff)
	}
	if got := rdmaDev(after, "mlx5_5").Ports[0].Counters["port_xmit_data"]; got >= rdmaDev(before, "mlx5_5").Ports[0].Counters["port_xmit_data"] {
		t.Errorf("traffic counters did not start over: %d", got)
	}
	clk.Step(10 * time.Minute)
	want["mlx5_1"], want["mlx5_2"] = "ACTIVE/LinkUp 400 link_downed=5", "ACTIVE/LinkUp 400 symbol_error=3000"
	if diff := cmp.Diff(want, fabricView(snapshot(t, n).Fabric)); diff != "" {
		t.Errorf("10m after the reboot (-want +got):\n%s", diff)
	}
	if got := len(n.KernelLog(0)); got != logged {
		t.Errorf("the reboot logged %d records", got-logged)
	}

	// The replacement: a new node of the same options.
	repl, err := New(Options{Fabric: ib8.Fabric, Clock: fakeclock.NewFakeClock(t0.Add(time.Hour))})
	if err != nil {
		t.Fatal(err)
	}
	s := snapshot(t, repl)
	for _, d := range s.Fabric.Devices {
		if p := d.Ports[0]; p.State != "ACTIVE" || *p.RateGbps != 400 || len(faultCounts(p)) != 0 {
			t.Errorf("replacement's %s: %s %v %v", d.Name, p.State, *p.RateGbps, faultCounts(p))
		}
	}
	if len(s.Fabric.Devices) != 8 {
		t.Errorf("replacement has %d devices", len(s.Fabric.Devices))
	}
}

// Clear is the repair of the part: the port is up at full rate, the
// device is back, counters stop rising and keep their counts, and
// traffic picks up where it stopped.
func TestFabricClear(t *testing.T) {
	n, clk := newTestNode(t, ib8)
	for _, f := range cableFaults {
		if err := n.Inject(f); err != nil {
			t.Fatal(err)
		}
	}
	clk.Step(90 * time.Second)
	downData := rdmaDev(snapshot(t, n), "mlx5_0").Ports[0].Counters["port_rcv_data"]
	for _, f := range cableFaults {
		if err := n.Clear(0, f.Kind); err != nil {
			t.Fatal(err)
		}
	}
	clk.Step(time.Hour)
	s := snapshot(t, n)
	want := map[string]string{
		"mlx5_0": "ACTIVE/LinkUp 400 link_downed=1", "mlx5_1": "ACTIVE/LinkUp 400 link_downed=2",
		"mlx5_2": "ACTIVE/LinkUp 400 symbol_error=450", "mlx5_3": "ACTIVE/LinkUp 400", "mlx5_4": "ACTIVE/LinkUp 400",
		"mlx5_5": "ACTIVE/LinkUp 400", "mlx5_6": "ACTIVE/LinkUp 400", "mlx5_7": "ACTIVE/LinkUp 400",
	}
	if diff := cmp.Diff(want, fabricView(s.Fabric)); diff != "" {
		t.Errorf("after Clear (-want +got):\n%s", diff)
	}
	// The port carried traffic for the 10m of uptime before it went down
	// and the hour since the repair, not the 90s between.
	data := rdmaDev(s, "mlx5_0").Ports[0].Counters["port_rcv_data"]
	if want := n.fab.traffic(n.fab.devs[0], 0, uint64(70*time.Minute/time.Second)) / 4; data != want || data <= downData {
		t.Errorf("port_rcv_data %d, want %d (while down %d)", data, want, downData)
	}
}

// The port-down line reads, through the real detector, as the ConnectX
// cable finding on the device's address.
func TestFabricPortDownLineDetected(t *testing.T) {
	n, _ := newTestNode(t, ib8)
	if err := n.Inject(Fault{Kind: KindFabricPortDown, Params: params{"device": "6"}}); err != nil {
		t.Fatal(err)
	}
	det := detect.New(xid.Default(), detect.Options{})
	var got []finding.Finding
	for _, r := range n.KernelLog(0) {
		got = det.Append(got, r.Message, t0)
	}
	if len(got) != 1 || got[0].Code != "MLX5_CABLE_UNPLUGGED" || got[0].Device != "0000:cc:00.0" || got[0].Severity != finding.Warning {
		t.Errorf("findings %+v", got)
	}
}

const fabricSchedule = `
- at: 1m
  fault: fabric-link-flap
  params: {device: 2, every: 30s, times: 3}
- after: 0s
  node: gpu-node-1
  gpu: 5
  fault: fabric-port-down
  params: {device: 7}
- after: 1m
  fault: efa-errors
  node: efa-node
  params: {counter: unresponsive_remote_events, rate: 0.5}
`

// Fabric faults come from schedules like the others; the GPU of an entry
// does not matter to them, and a node without their fabric refuses them.
func TestFabricSchedule(t *testing.T) {
	s, err := LoadSchedule(strings.NewReader(fabricSchedule))
	if err != nil {
		t.Fatal(err)
	}
	want := Schedule{
		{At: time.Minute, Node: "*", Fault: Fault{Kind: KindFabricLinkFlap, Params: params{"device": "2", "every": "30s", "times": "3"}}},
		{At: time.Minute, Node: "gpu-node-1", Fault: Fault{Kind: KindFabricPortDown, GPU: 5, Params: params{"device": "7"}}},
		{At: 2 * time.Minute, Node: "efa-node", Fault: Fault{Kind: KindEFAErrors, Params: params{"counter": "unresponsive_remote_events", "rate": "0.5"}}},
	}
	if diff := cmp.Diff(want, s); diff != "" {
		t.Fatalf("schedule (-want +got):\n%s", diff)
	}
	// An entry applies when a snapshot finds it due, and its fault counts
	// from then.
	n, clk := newTestNode(t, Options{NodeName: "gpu-node-1", Fabric: ib8.Fabric, Schedule: s})
	clk.Step(time.Minute)
	snapshot(t, n)
	clk.Step(time.Minute)
	got := fabricView(snapshot(t, n).Fabric)
	if got["mlx5_2"] != "ACTIVE/LinkUp 400 link_downed=3" || got["mlx5_7"] != "DOWN/Polling 10 link_downed=1" {
		t.Errorf("after 2m: %v", got)
	}
	if _, err := New(Options{NodeName: "gpu-node-1", Schedule: s}); err == nil ||
		err.Error() != "sim: schedule entry 0 for node gpu-node-1 (at 1m0s): fault fabric-link-flap: node gpu-node-1 has no RDMA fabric" {
		t.Errorf("New without a fabric = %v", err)
	}
	e, clk := newTestNode(t, Options{NodeName: "efa-node", Fabric: efa.Fabric, Schedule: s[2:]})
	clk.Step(2 * time.Minute)
	snapshot(t, e)
	clk.Step(time.Minute)
	if got := faultCounts(rdmaDev(snapshot(t, e), "rdmap79s0").Ports[0]); !cmp.Equal(got, map[string]uint64{"unresponsive_remote_events": 30}) {
		t.Errorf("EFA node after 3m: %v", got)
	}
}
