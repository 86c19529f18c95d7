package analyzer

import (
	"slices"
	"testing"
	"time"

	fakeclock "k8s.io/utils/clock/testing"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/fabric"
	"github.com/gpuheal/gpuheal/internal/gpu"
)

// fabricRig feeds hand-made fabric snapshots through the default rules
// on a fake clock, 10 s apart, as the agent collects.
type fabricRig struct {
	t   *testing.T
	clk *fakeclock.FakeClock
	eng *Engine
	fab *fabric.Snapshot
}

func newFabricRig(t *testing.T, devices, expected int) *fabricRig {
	clk := fakeclock.NewFakeClock(t0)
	f := &fabric.Snapshot{ExpectedDevices: expected}
	for i := range devices {
		f.Devices = append(f.Devices, fabric.Device{Name: "mlx5_" + string(rune('0'+i)), Driver: "mlx5_core",
			Kind: fabric.KindInfiniBand, PCIBusID: "0000:1" + string(rune('0'+i)) + ":00.0",
			Ports: []fabric.Port{{Num: 1, State: "ACTIVE", PhysState: "LinkUp", RateGbps: gpu.F64(400), LinkLayer: "InfiniBand",
				Counters: map[string]uint64{"link_downed": 0, "symbol_error": 0}}}})
	}
	return &fabricRig{t: t, clk: clk, eng: NewEngine(DefaultRuleSet(), clk), fab: f}
}

func (r *fabricRig) port(dev int) *fabric.Port { return &r.fab.Devices[dev].Ports[0] }

// step evaluates a deep enough copy of the fabric (the engine keeps the
// counter maps it is given) and then advances the clock 10 s.
func (r *fabricRig) step() Result {
	f := *r.fab
	f.Devices = slices.Clone(f.Devices)
	for i := range f.Devices {
		f.Devices[i].Ports = slices.Clone(f.Devices[i].Ports)
		for j := range f.Devices[i].Ports {
			p := &f.Devices[i].Ports[j]
			p.Counters = cloneCounters(p.Counters)
			p.HWCounters = cloneCounters(p.HWCounters)
		}
	}
	res := r.eng.Evaluate(&gpu.NodeSnapshot{Time: r.clk.Now(), Backend: "sim", Fabric: &f}, nil)
	r.clk.Step(10 * time.Second)
	return res
}

func (r *fabricRig) run(d time.Duration) Result {
	var res Result
	for end := r.clk.Now().Add(d); r.clk.Now().Before(end); {
		res = r.step()
	}
	return res
}

func cloneCounters(m map[string]uint64) map[string]uint64 {
	if m == nil {
		return nil
	}
	out := make(map[string]uint64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func portProblems(res Result) []string {
	var out []string
	for _, p := range res.Problems {
		if p.Port != nil {
			out = append(out, p.Rule+"/"+p.Port.String())
		} else if p.Condition == v1alpha1.ConditionGPUHealNetworkingHealthy {
			out = append(out, p.Rule+"/node")
		}
	}
	slices.Sort(out)
	return out
}

func TestFabricPortDownOnlyOnceItWasUp(t *testing.T) {
	r := newFabricRig(t, 2, 0)
	// mlx5_1 never came up (an unused port): not a fault.
	r.port(1).State, r.port(1).PhysState = "DOWN", "Disabled"
	if got := portProblems(r.run(2 * time.Minute)); len(got) != 0 {
		t.Fatalf("healthy fabric with an unused port: %v", got)
	}
	r.port(0).State, r.port(0).PhysState = "DOWN", "Polling"
	if got := portProblems(r.run(50 * time.Second)); len(got) != 0 {
		t.Fatalf("down for 50s, under the rule's 1m: %v", got)
	}
	res := r.run(20 * time.Second)
	if got := portProblems(res); !slices.Equal(got, []string{"fabric-port-down/mlx5_0/1"}) {
		t.Fatalf("down for 70s: %v", got)
	}
	c := condition(t, res, v1alpha1.ConditionGPUHealNetworkingHealthy)
	if c.Status != StatusFalse || c.Reason != "FabricPortDown" || c.Action != "replace" ||
		c.Message != "infiniband port mlx5_0/1 (0000:10:00.0) is DOWN/Polling for 1m" {
		t.Errorf("condition %+v", c)
	}
	if g := condition(t, res, v1alpha1.ConditionGPUHealAcceleratorHealthy); g.Status != StatusTrue {
		t.Errorf("a fabric fault must not touch the GPU condition: %+v", g)
	}
	r.port(0).State, r.port(0).PhysState = "ACTIVE", "LinkUp"
	if got := portProblems(r.run(10 * time.Second)); len(got) != 0 {
		t.Errorf("port back up: %v", got)
	}
}

func TestFabricExpectedDevicesMakeEveryPortExpectedUp(t *testing.T) {
	r := newFabricRig(t, 4, 4)
	r.port(3).State, r.port(3).PhysState = "DOWN", "Disabled"
	if got := portProblems(r.run(70 * time.Second)); !slices.Equal(got, []string{"fabric-port-down/mlx5_3/1"}) {
		t.Errorf("a never-up port of a node that expects its devices: %v", got)
	}
}

func TestFabricMissingDevice(t *testing.T) {
	r := newFabricRig(t, 4, 4)
	r.run(time.Minute)
	r.fab.Devices = r.fab.Devices[:3]
	res := r.run(70 * time.Second)
	p := problem(t, res, "fabric-devices-missing")
	if p.Message != "3 of 4 RDMA devices present" || p.Action != "replace" {
		t.Errorf("problem %+v", p)
	}
}

func TestFabricDegradedRateAgainstPeers(t *testing.T) {
	r := newFabricRig(t, 8, 0)
	r.run(time.Minute)
	r.port(5).RateGbps = gpu.F64(200) // one lane pair lost: 4X NDR → 2X
	got := portProblems(r.run(70 * time.Second))
	if !slices.Equal(got, []string{"fabric-port-degraded-rate/mlx5_5/1"}) {
		t.Errorf("one port at half its peers' rate: %v", got)
	}
}

func TestFabricFlappingCountsEveryLinkDown(t *testing.T) {
	r := newFabricRig(t, 1, 0)
	r.run(30 * time.Second)
	// Two flaps in one interval and one in a later one: three in 10m.
	r.port(0).Counters["link_downed"] += 2
	if got := portProblems(r.run(time.Minute)); len(got) != 0 {
		t.Fatalf("two flaps: %v", got)
	}
	r.port(0).Counters["link_downed"]++
	res := r.run(10 * time.Second)
	if got := portProblems(res); !slices.Equal(got, []string{"fabric-link-flapping/mlx5_0/1"}) {
		t.Fatalf("three flaps in 10m: %v", got)
	}
	// The link stays up; the problem holds while the flaps are in the
	// window, then clearAfter (30m) more.
	if got := portProblems(r.run(20 * time.Minute)); len(got) != 1 {
		t.Errorf("20m later, within clearAfter: %v", got)
	}
	if got := portProblems(r.run(25 * time.Minute)); len(got) != 0 {
		t.Errorf("45m later: %v", got)
	}
}

func TestFabricCounterResetIsNoDelta(t *testing.T) {
	r := newFabricRig(t, 1, 0)
	r.port(0).Counters["link_downed"] = 1000
	r.run(30 * time.Second)
	r.port(0).Counters["link_downed"] = 0 // driver reload
	r.run(30 * time.Second)
	r.port(0).Counters["link_downed"] = 1
	if got := portProblems(r.run(30 * time.Second)); len(got) != 0 {
		t.Errorf("a counter that went down is no flap: %v", got)
	}
}

func TestFabricUnreadKeepsState(t *testing.T) {
	r := newFabricRig(t, 1, 0)
	r.run(30 * time.Second)
	r.port(0).State = "DOWN"
	r.run(70 * time.Second)
	// The fabric goes unread: the problem stays, as a GPU rule's does.
	res := r.eng.Evaluate(&gpu.NodeSnapshot{Time: r.clk.Now(), Backend: "sim"}, nil)
	if got := portProblems(res); !slices.Equal(got, []string{"fabric-port-down/mlx5_0/1"}) {
		t.Errorf("fabric unread: %v", got)
	}
}

func TestFabricEFAErrorsAreAWarning(t *testing.T) {
	r := newFabricRig(t, 1, 0)
	d := &r.fab.Devices[0]
	d.Name, d.Driver, d.Kind = "rdmap16s27", "efa", fabric.KindEFA
	d.Ports[0].Counters = nil
	d.Ports[0].HWCounters = map[string]uint64{"retrans_timeout_events": 0, "rx_drops": 0}
	r.run(30 * time.Second)
	d.Ports[0].HWCounters["rx_drops"] += 50 // drops alone are traffic, not a fault
	if got := portProblems(r.run(10 * time.Second)); len(got) != 0 {
		t.Fatalf("rx_drops: %v", got)
	}
	d.Ports[0].HWCounters["retrans_timeout_events"]++
	res := r.run(10 * time.Second)
	p := problem(t, res, "efa-errors-rising")
	if p.Severity != "warning" {
		t.Errorf("problem %+v", p)
	}
	if c := condition(t, res, v1alpha1.ConditionGPUHealNetworkingHealthy); c.Status != StatusTrue {
		t.Errorf("a warning must not set the condition False: %+v", c)
	}
}

func TestByValueCountOnlyOnPortRules(t *testing.T) {
	_, err := Load([]byte("rules:\n- {name: r, expr: gpu.missing, value: '1', count: {times: 2, window: 1m, byValue: true}, severity: fatal, reason: X, condition: GPUHealAcceleratorHealthy}\n"))
	if err == nil {
		t.Fatal("byValue on a gpu rule loaded")
	}
	_, err = Load([]byte("rules:\n- {name: r, scope: port, expr: port.state == 'DOWN', count: {times: 2, window: 1m, byValue: true}, severity: fatal, reason: X, condition: NetworkingReady}\n"))
	if err == nil {
		t.Fatal("byValue without a value loaded")
	}
	if _, err := Load([]byte("rules:\n- {name: r, scope: gpu, expr: port.state == 'DOWN', severity: fatal, reason: X, condition: NetworkingReady}\n")); err == nil {
		t.Fatal("a gpu rule naming port loaded")
	}
}
