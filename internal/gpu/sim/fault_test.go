package sim

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuheal/gpuheal/internal/gpu"
)

func TestInjectRejectsBadFaults(t *testing.T) {
	tests := []struct {
		name  string
		opts  Options
		fault Fault
		want  string
	}{
		{"unknown kind", Options{}, Fault{Kind: "melt"}, `sim: unknown fault kind "melt" (known: dbe, driver-version-change, efa-errors, fabric-degraded-rate, fabric-device-missing, fabric-link-flap, fabric-manager-stopped, fabric-port-down, fabric-symbol-errors, fell-off-bus, gpu-missing, latent, nvlink-down, nvlink-errors, pcie-downgrade, pcie-replay, power-brake, recovery-action, retired-pages, row-remap-failure, row-remap-pending, sbe, thermal-slowdown, xid)`},
		{"unknown param", Options{}, Fault{Kind: KindNVLinkDown, Params: params{"lnk": "1"}}, `sim: fault nvlink-down: unknown param "lnk" (allowed: link)`},
		{"param on a kind without params", Options{}, Fault{Kind: KindPowerBrake, Params: params{"count": "1"}}, `sim: fault power-brake: unknown param "count" (takes no params)`},
		{"missing required param", Options{}, Fault{Kind: KindXid}, `sim: fault xid: param "code": required`},
		{"not a number", Options{}, Fault{Kind: KindSBE, Params: params{"count": "many"}}, `sim: fault sbe: param "count": bad value "many": want a whole number`},
		{"out of range", Options{}, Fault{Kind: KindXid, Params: params{"code": "0"}}, `sim: fault xid: param "code": bad value "0": want 1–999`},
		{"negative gpu", Options{}, Fault{Kind: KindDBE, GPU: -1}, "sim: fault dbe: gpu -1 out of range 0–7"},
		{"gpu beyond node", Options{GPUs: 4}, Fault{Kind: KindDBE, GPU: 4}, "sim: fault dbe: gpu 4 out of range (node sim-0 has 4 GPUs)"},
		{"bad pid", Options{}, Fault{Kind: KindXid, Params: params{"code": "13", "pid": "-1"}}, `sim: fault xid: param "pid": bad value "-1": want a process id`},
		{"bad cause", Options{}, Fault{Kind: KindRowRemapPending, Params: params{"cause": "cosmic"}}, `sim: fault row-remap-pending: param "cause": bad value "cosmic": want uncorrectable or correctable`},
		{"retired pages without counts", Options{Model: "V100"}, Fault{Kind: KindRetiredPages}, `sim: fault retired-pages: one of params "sbe" or "dbe" must be above 0`},
		{"bad bool", Options{Model: "V100"}, Fault{Kind: KindRetiredPages, Params: params{"dbe": "1", "pending": "maybe"}}, `sim: fault retired-pages: param "pending": bad value "maybe": want true or false`},
		{"retired pages on H100", Options{}, Fault{Kind: KindRetiredPages, Params: params{"dbe": "1"}}, "sim: fault retired-pages: H100-80GB-HBM3 remaps rows instead of retiring pages (use row-remap-pending)"},
		{"row remap on V100", Options{Model: "V100"}, Fault{Kind: KindRowRemapPending}, "sim: fault row-remap-pending: V100-SXM2-32GB retires pages instead of remapping rows (use retired-pages)"},
		{"downgrade without gen or width", Options{}, Fault{Kind: KindPCIeDowngrade}, `sim: fault pcie-downgrade: one of params "gen" or "width" is required`},
		{"odd width", Options{}, Fault{Kind: KindPCIeDowngrade, Params: params{"width": "12"}}, `sim: fault pcie-downgrade: param "width": bad value "12": want 1, 2, 4, 8 or 16`},
		{"gen above model", Options{Model: "A100"}, Fault{Kind: KindPCIeDowngrade, Params: params{"gen": "5"}}, `sim: fault pcie-downgrade: param "gen": A100-SXM4-80GB links run at most PCIe gen 4`},
		{"link above model", Options{Model: "A100"}, Fault{Kind: KindNVLinkDown, Params: params{"link": "12"}}, `sim: fault nvlink-down: param "link": A100-SXM4-80GB has links 0–11`},
		{"nvlink errors all zero", Options{}, Fault{Kind: KindNVLinkErrors, Params: params{"link": "0"}}, `sim: fault nvlink-errors: one of params "crc", "crc-data", "replay" or "recovery" must be above 0`},
		{"temperature too low", Options{}, Fault{Kind: KindThermalSlowdown, Params: params{"temp": "20"}}, `sim: fault thermal-slowdown: param "temp": bad value "20": want 40–150`},
		{"bad driver version", Options{}, Fault{Kind: KindDriverVersionChange, Params: params{"version": "new"}}, `sim: fault driver-version-change: param "version": bad value "new": want a driver version like 575.57.08`},
		{"driver version missing", Options{}, Fault{Kind: KindDriverVersionChange}, `sim: fault driver-version-change: param "version": required`},
		{"fabric manager without NVSwitch", Options{GPUs: 2}, Fault{Kind: KindFabricManagerStopped}, "sim: fault fabric-manager-stopped: node sim-0 has no NVSwitch, so no fabric manager"},
		{"bad recovery action", Options{}, Fault{Kind: KindRecoveryAction, Params: params{"action": "pray"}}, `sim: fault recovery-action: param "action": bad value "pray": want one of none, gpu-reset, node-reboot, drain-p2p, drain-and-reset or 0–4`},
		{"recovery action on V100", Options{Model: "V100"}, Fault{Kind: KindRecoveryAction, Params: params{"action": "2"}}, "sim: fault recovery-action: V100-SXM2-32GB does not report a recovery action"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n, _ := newTestNode(t, tc.opts)
			before := snapshotJSON(t, n)
			err := n.Inject(tc.fault)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("Inject error = %v\nwant %s", err, tc.want)
			}
			if after := snapshotJSON(t, n); string(after) != string(before) || len(n.KernelLog(0)) != 0 {
				t.Error("a rejected fault changed the node")
			}
		})
	}
}

func TestClear(t *testing.T) {
	n, _ := newTestNode(t, Options{})
	clean := snapshot(t, n)
	faults := []Fault{
		{Kind: KindSBE, GPU: 0}, {Kind: KindDBE, GPU: 0}, {Kind: KindRowRemapPending, GPU: 0},
		{Kind: KindRowRemapFailure, GPU: 0}, {Kind: KindPCIeReplay, GPU: 0},
		{Kind: KindPCIeDowngrade, GPU: 0, Params: params{"width": "8"}},
		{Kind: KindNVLinkDown, GPU: 0, Params: params{"link": "1"}},
		{Kind: KindNVLinkErrors, GPU: 0, Params: params{"link": "1", "crc": "9"}},
		{Kind: KindThermalSlowdown, GPU: 0}, {Kind: KindPowerBrake, GPU: 0},
		{Kind: KindFellOffBus, GPU: 0}, {Kind: KindGPUMissing, GPU: 0},
		{Kind: KindDriverVersionChange, Params: params{"version": "575.57.08"}},
		{Kind: KindFabricManagerStopped}, {Kind: KindRecoveryAction, GPU: 0, Params: params{"action": "1"}},
		{Kind: KindXid, GPU: 0, Params: params{"code": "13"}},
	}
	for _, f := range faults {
		if err := n.Inject(f); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range faults {
		if err := n.Clear(f.GPU, f.Kind); err != nil {
			t.Fatal(err)
		}
	}
	s := snapshot(t, n)
	g := s.GPUs[0]
	// History stays: aggregate ECC, remap counts, Xid totals, the new driver.
	if *g.ECC.AggregateUncorrected != 1 || *g.ECC.VolatileUncorrected != 0 || g.RemappedRows.Uncorrectable != 1 {
		t.Errorf("ecc/remap history: %d %d %v", *g.ECC.AggregateUncorrected, *g.ECC.VolatileUncorrected, g.RemappedRows)
	}
	if s.DriverVersion != "575.57.08" || s.KernelModuleVersion != "575.57.08" {
		t.Errorf("driver %s module %s", s.DriverVersion, s.KernelModuleVersion)
	}
	if len(g.XidTotals) == 0 {
		t.Error("Xid totals were cleared")
	}
	// Everything else reads as before the faults.
	g.ECC, g.RemappedRows, g.XidEvents, g.XidTotals = clean.GPUs[0].ECC, clean.GPUs[0].RemappedRows, nil, nil
	g.TemperatureCelsius, g.MemoryTemperatureCelsius = clean.GPUs[0].TemperatureCelsius, clean.GPUs[0].MemoryTemperatureCelsius
	if diff := cmp.Diff(clean.GPUs[0], g); diff != "" {
		t.Errorf("gpu 0 after Clear (-clean +got):\n%s", diff)
	}
	if s.FoundGPUs != 8 || s.FabricManager != "running" {
		t.Errorf("found %d, fabric manager %q", s.FoundGPUs, s.FabricManager)
	}

	if err := n.Clear(0, "melt"); err == nil || !strings.Contains(err.Error(), `unknown fault kind "melt"`) {
		t.Errorf("Clear(melt) = %v", err)
	}
	if err := n.Clear(8, KindDBE); err == nil || err.Error() != "sim: clear dbe: gpu 8 out of range (node sim-0 has 8 GPUs)" {
		t.Errorf("Clear(gpu 8) = %v", err)
	}
}

// Clearing one HW slowdown cause keeps the slowdown bit while the other holds.
func TestClearKeepsOtherSlowdown(t *testing.T) {
	n, _ := newTestNode(t, Options{})
	for _, k := range []Kind{KindThermalSlowdown, KindPowerBrake} {
		if err := n.Inject(Fault{Kind: k, GPU: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if err := n.Clear(1, KindThermalSlowdown); err != nil {
		t.Fatal(err)
	}
	if got := *snapshot(t, n).GPUs[1].ClockEventReasons; got != gpu.ClockEventHwPowerBrake|gpu.ClockEventHwSlowdown {
		t.Errorf("clock reasons = %#x", got)
	}
}

func TestReset(t *testing.T) {
	n, _ := newTestNode(t, Options{})
	clean := snapshotJSON(t, n)
	for _, f := range []Fault{{Kind: KindFellOffBus, GPU: 2}, {Kind: KindDBE, GPU: 3}, {Kind: KindFabricManagerStopped}} {
		if err := n.Inject(f); err != nil {
			t.Fatal(err)
		}
	}
	logged := len(n.KernelLog(0))
	n.Reset()
	if got := snapshotJSON(t, n); string(got) != string(clean) {
		t.Errorf("after Reset:\n%s\nwant\n%s", got, clean)
	}
	if err := n.Inject(Fault{Kind: KindDBE, GPU: 0}); err != nil {
		t.Fatal(err)
	}
	recs := n.KernelLog(0)
	if len(recs) != logged+1 || recs[logged].Seq != uint64(logged) {
		t.Errorf("kernel log after Reset: %d records, last seq %d", len(recs), recs[len(recs)-1].Seq)
	}
}
