package analyzer

import (
	"context"
	"testing"
	"time"

	fakeclock "k8s.io/utils/clock/testing"

	"github.com/gpuheal/gpuheal/internal/fabric"
	"github.com/gpuheal/gpuheal/internal/finding"
	"github.com/gpuheal/gpuheal/internal/gpu"
	"github.com/gpuheal/gpuheal/internal/gpu/sim"
)

// benchRules is the default set plus four user rules.
func benchRules(b *testing.B) *RuleSet {
	extra := `
- {name: extra-hot, expr: 'has(gpu.temperatureCelsius) && gpu.temperatureCelsius > 85.0', for: 5m, severity: warning, condition: AcceleratedHardwareReady, reason: Hot}
- {name: extra-sbe-rate, expr: 'seconds > 0.0 && has(delta.eccVolatileCorrected) && double(delta.eccVolatileCorrected) / seconds > 10.0', severity: warning, condition: AcceleratedHardwareReady, reason: SBERate}
- {name: extra-power, expr: 'has(gpu.powerDrawWatts) && has(gpu.powerLimitWatts) && gpu.powerDrawWatts > gpu.powerLimitWatts', for: 1m, severity: warning, condition: AcceleratedHardwareReady, reason: Power}
- {name: extra-xid13-burst, scope: finding, expr: 'finding.xid == 13', count: {times: 3, window: 10m}, severity: fatal, condition: AcceleratedHardwareReady, reason: Xid13Burst}
`
	rs, err := Load(append(DefaultRulesYAML(), extra...))
	if err != nil {
		b.Fatal(err)
	}
	if want := DefaultRuleSet().Len() + 4; rs.Len() != want {
		b.Fatalf("%d rules, want %d", rs.Len(), want)
	}
	return rs
}

func benchSnapshots(b *testing.B, clk *fakeclock.FakeClock, fab sim.FabricOptions) []*gpu.NodeSnapshot {
	n, err := sim.New(sim.Options{Clock: clk, Fabric: fab})
	if err != nil {
		b.Fatal(err)
	}
	var out []*gpu.NodeSnapshot
	for range 4 {
		s, err := n.Snapshot(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		out = append(out, s)
		clk.Step(30 * time.Second)
	}
	return out
}

// BenchmarkEvaluateRules8GPU is one agent interval on an 8-GPU H100 node
// (18 NVLinks per GPU): the default rules and four more, no new findings,
// without an RDMA fabric and with a p5's 32 EFA devices (the port rules
// then run 32 times each). Target ≤ 1 ms.
func BenchmarkEvaluateRules8GPU(b *testing.B) {
	for _, bc := range []struct {
		name string
		fab  sim.FabricOptions
	}{
		{"no-fabric", sim.FabricOptions{}},
		{"efa-32", sim.FabricOptions{Devices: sim.EFADevicesP5, Kind: fabric.KindEFA}},
	} {
		b.Run(bc.name, func(b *testing.B) { benchEvaluate(b, bc.fab) })
	}
}

func benchEvaluate(b *testing.B, fab sim.FabricOptions) {
	clk := fakeclock.NewFakeClock(t0)
	snaps := benchSnapshots(b, clk, fab)
	e := NewEngine(benchRules(b), clk)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		clk.Step(30 * time.Second)
		e.Evaluate(snaps[i%len(snaps)], nil)
		i++
	}
}

// BenchmarkEvaluateRules8GPUFindings adds a burst of 16 kernel-log
// findings to every interval.
func BenchmarkEvaluateRules8GPUFindings(b *testing.B) {
	clk := fakeclock.NewFakeClock(t0)
	snaps := benchSnapshots(b, clk, sim.FabricOptions{})
	e := NewEngine(benchRules(b), clk)
	var fs []finding.Finding
	for i := range 16 {
		fs = append(fs, finding.Finding{Code: "XID13", Xid: 13, GPU: snaps[0].GPUs[i%8].PCIBusID, Severity: finding.Warning, Action: finding.ActionRestartApp})
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		clk.Step(30 * time.Second)
		e.Evaluate(snaps[i%len(snaps)], fs)
		i++
	}
}

func BenchmarkLoadDefaults(b *testing.B) {
	for b.Loop() {
		if _, err := Load(defaultRulesYAML); err != nil {
			b.Fatal(err)
		}
	}
}
