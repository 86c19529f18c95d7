package analyzer

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/fabric"
	"github.com/gpuheal/gpuheal/internal/finding"
	"github.com/gpuheal/gpuheal/internal/gpu/sim"
)

func TestDefaultRuleSet(t *testing.T) {
	rs := DefaultRuleSet()
	if got, want := rs.Len(), 49; got != want {
		t.Errorf("default rules: %d, want %d (update the table in the report and doc.go)", got, want)
	}
	for _, r := range rs.Rules {
		if r.Condition != v1alpha1.ConditionGPUHealAcceleratorHealthy && r.Condition != v1alpha1.ConditionGPUHealKernelHealthy &&
			r.Condition != v1alpha1.ConditionGPUHealNetworkingHealthy {
			t.Errorf("rule %s: condition %q", r.Name, r.Condition)
		}
	}
	if _, err := Load(DefaultRulesYAML()); err != nil {
		t.Fatalf("DefaultRulesYAML does not load: %v", err)
	}
}

// TestDefaultRulesSim drives every sim fault through the default rules:
// snapshot rules from the readings, finding rules from the sim's kernel
// log run through the real detector. want is the exact set of active
// problems after 6 minutes, so a false positive fails as surely as a miss.
func TestDefaultRulesSim(t *testing.T) {
	type fault struct {
		kind   sim.Kind
		gpu    int
		params map[string]string
	}
	ib := sim.FabricOptions{Devices: sim.InfiniBandDevices}
	efa := sim.FabricOptions{Devices: sim.EFADevicesP5, Kind: fabric.KindEFA}
	tests := []struct {
		name      string
		model     string
		fabric    sim.FabricOptions
		expected  string // expectedDriverVersion
		faults    []fault
		down      bool
		want      []string
		reason    string // reason of AcceleratedHardwareReady; "" = True
		netReason string // reason of GPUHealNetworkingHealthy; "" = True
		wantKernl bool
	}{
		{name: "healthy"},
		{name: "dbe", faults: []fault{{sim.KindDBE, 2, nil}},
			want: []string{"double-bit-ecc/2", "xid-fatal/2"}, reason: "NvidiaDoubleBitError"},
		{name: "row remap failure", faults: []fault{{sim.KindRowRemapFailure, 1, nil}},
			want: []string{"row-remap-failure/1", "xid-fatal-reboot/1"}, reason: "NvidiaRowRemapFailure"},
		{name: "row remap pending", faults: []fault{{sim.KindRowRemapPending, 1, nil}},
			want: []string{"row-remap-pending/1", "xid-warning/1"}},
		{name: "retired pages", model: "V100-SXM2-32GB", faults: []fault{{sim.KindRetiredPages, 0, map[string]string{"sbe": "59", "dbe": "1"}}},
			want: []string{"retired-pages-limit/0", "retired-pages-pending/0", "xid-warning/0"}, reason: "NvidiaPageRetirementLimit"},
		{name: "pcie downgrade", faults: []fault{{sim.KindPCIeDowngrade, 3, map[string]string{"width": "8"}}},
			want: []string{"pcie-degraded/3"}},
		{name: "pcie replays", faults: []fault{{sim.KindPCIeReplay, 3, map[string]string{"count": "1000"}}},
			want: []string{"pcie-replay-rate/3"}},
		{name: "nvlink down", faults: []fault{{sim.KindNVLinkDown, 4, map[string]string{"link": "3"}}},
			want: []string{"nvlink-down/4", "xid-fatal-reboot/4"}, reason: "NvidiaXID74Error"},
		{name: "nvlink errors", faults: []fault{{sim.KindNVLinkErrors, 4, map[string]string{"link": "3", "crc": "5000"}}},
			want: []string{"nvlink-errors/4"}},
		{name: "thermal", faults: []fault{{sim.KindThermalSlowdown, 5, nil}},
			want: []string{"thermal-slowdown/5"}},
		{name: "power brake", faults: []fault{{sim.KindPowerBrake, 5, nil}},
			want: []string{"power-brake-slowdown/5"}},
		{name: "fell off the bus", faults: []fault{{sim.KindFellOffBus, 6, nil}},
			want: []string{"gpu-fell-off-bus/6", "gpu-missing/6", "xid-fatal-reboot/6"}, reason: "NvidiaGPUMissing"},
		{name: "gpu missing", faults: []fault{{sim.KindGPUMissing, 7, nil}},
			want: []string{"gpu-count-low/node"}, reason: "NvidiaGPUMissing"},
		{name: "driver upgrade half done", expected: "570.133.20", faults: []fault{{sim.KindDriverVersionChange, 0, map[string]string{"version": "575.57.08"}}},
			want: []string{"driver-api-mismatch/node", "driver-mismatch/node", "driver-version-unexpected/node"}, reason: "NvidiaDriverMismatch"},
		{name: "fabric manager", faults: []fault{{sim.KindFabricManagerStopped, 0, nil}},
			want: []string{"fabric-manager-down/node"}, reason: "NvidiaFabricManagerDown"},
		{name: "recovery reboot", faults: []fault{{sim.KindRecoveryAction, 2, map[string]string{"action": "node-reboot"}}},
			want: []string{"recovery-action-reboot/2", "xid-fatal-reboot/2"}, reason: "NvidiaRecoveryActionPending"},
		{name: "recovery drain and reset", faults: []fault{{sim.KindRecoveryAction, 2, map[string]string{"action": "drain-and-reset"}}},
			want: []string{"recovery-action-reset/2", "reset-required/2", "xid-fatal/2"}, reason: "NvidiaRecoveryActionPending"},
		{name: "driver unavailable", down: true,
			want: []string{"driver-unavailable/node"}, reason: "NvidiaDriverUnavailable"},
		// The RDMA fabric: the fatal faults take the node out through the
		// network condition and leave the GPU condition alone; rising
		// errors are warnings only. A port down also logs the ConnectX's
		// cable event, a warning of its own.
		{name: "healthy infiniband", fabric: ib},
		{name: "healthy efa", fabric: efa},
		{name: "fabric port down", fabric: ib, faults: []fault{{sim.KindFabricPortDown, 0, map[string]string{"device": "3"}}},
			want: []string{"fabric-adapter-warning/node", "fabric-port-down/mlx5_3/1"}, netReason: "FabricPortDown"},
		{name: "fabric link flap", fabric: ib, faults: []fault{{sim.KindFabricLinkFlap, 0, map[string]string{"device": "1"}}},
			want: []string{"fabric-link-flapping/mlx5_1/1"}, netReason: "FabricLinkFlapping"},
		{name: "fabric device missing", fabric: ib, faults: []fault{{sim.KindFabricDeviceMissing, 0, map[string]string{"device": "7"}}},
			want: []string{"fabric-devices-missing/node"}, netReason: "FabricDeviceMissing"},
		{name: "efa device missing", fabric: efa, faults: []fault{{sim.KindFabricDeviceMissing, 0, map[string]string{"device": "31"}}},
			want: []string{"fabric-devices-missing/node"}, netReason: "FabricDeviceMissing"},
		{name: "fabric degraded rate", fabric: ib, faults: []fault{{sim.KindFabricDegradedRate, 0, map[string]string{"device": "5"}}},
			want: []string{"fabric-port-degraded-rate/mlx5_5/1"}, netReason: "FabricPortDegradedRate"},
		{name: "fabric symbol errors", fabric: ib, faults: []fault{{sim.KindFabricSymbolErrors, 0, map[string]string{"device": "2"}}},
			want: []string{"fabric-port-errors-rising/mlx5_2/1"}},
		{name: "efa errors", fabric: efa, faults: []fault{{sim.KindEFAErrors, 0, map[string]string{"device": "4"}}},
			want: []string{"efa-errors-rising/rdmap96s0/1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := DefaultRuleSet()
			if tt.expected != "" {
				copied := *rs
				copied.ExpectedDriverVersion = tt.expected
				rs = &copied
			}
			r := newRig(t, sim.Options{Model: tt.model, Fabric: tt.fabric}, rs)
			if got := activeAt(r.run(time.Minute)); len(got) != 0 {
				t.Fatalf("healthy node has problems: %v", got)
			}
			for _, f := range tt.faults {
				r.inject(f.kind, f.gpu, f.params)
			}
			r.down = tt.down
			res := r.run(6 * time.Minute)
			if diff := cmp.Diff(tt.want, activeAt(res)); diff != "" {
				t.Errorf("active problems (-want +got):\n%s", diff)
			}
			c := condition(t, res, v1alpha1.ConditionGPUHealAcceleratorHealthy)
			wantStatus, wantReason := StatusFalse, tt.reason
			if tt.reason == "" {
				wantStatus, wantReason = StatusTrue, "GPUHealAcceleratorIsHealthy"
			}
			if c.Status != wantStatus || c.Reason != wantReason {
				t.Errorf("condition = %s/%s (%s), want %s/%s", c.Status, c.Reason, c.Message, wantStatus, wantReason)
			}
			if k := condition(t, res, v1alpha1.ConditionGPUHealKernelHealthy); k.Status != StatusTrue {
				t.Errorf("KernelReady = %+v, want True", k)
			}
			n := condition(t, res, v1alpha1.ConditionGPUHealNetworkingHealthy)
			wantStatus, wantReason = StatusFalse, tt.netReason
			if tt.netReason == "" {
				wantStatus, wantReason = StatusTrue, "GPUHealNetworkingIsHealthy"
			}
			if n.Status != wantStatus || n.Reason != wantReason {
				t.Errorf("network condition = %s/%s (%s), want %s/%s", n.Status, n.Reason, n.Message, wantStatus, wantReason)
			}
			for _, p := range res.Problems {
				if p.Reason == "" || p.Message == "" || p.Action.Rank() < 0 {
					t.Errorf("incomplete problem %+v", p)
				}
				if p.Condition == v1alpha1.ConditionGPUHealNetworkingHealthy && tt.netReason == "" && p.Severity != finding.Warning {
					t.Errorf("%s is %s, want a warning", p.Rule, p.Severity)
				}
			}
			for _, err := range res.Errors {
				t.Errorf("evaluation error: %v", err)
			}
		})
	}
}

// activeAt is active with a port problem's port: "rule/device/port".
func activeAt(res Result) []string {
	var out []string
	for _, p := range res.Problems {
		switch {
		case p.Port != nil:
			out = append(out, p.Rule+"/"+p.Port.String())
		case p.GPU != nil:
			out = append(out, p.Rule+"/"+fmt.Sprint(p.GPU.Index))
		default:
			out = append(out, p.Rule+"/node")
		}
	}
	slices.Sort(out)
	return out
}

func TestDefaultMessages(t *testing.T) {
	r := newRig(t, sim.Options{}, DefaultRuleSet())
	r.run(time.Minute)
	r.inject(sim.KindNVLinkDown, 3, map[string]string{"link": "3"})
	r.inject(sim.KindPCIeDowngrade, 2, map[string]string{"width": "8"})
	r.inject(sim.KindDBE, 1, map[string]string{"count": "2"})
	res := r.run(6 * time.Minute)
	want := map[string]string{
		// The issue asks for index, UUID and PCI id; the UUIDs are the sim's, fixed by its seed.
		"nvlink-down":      "GPU 3 (GPU-1df05cf8-a84c-f9f2-ba7d-b11012eec015, 0000:5d:00.0): NVLink links down: [3]",
		"pcie-degraded":    "GPU 2 (GPU-0d240844-e833-5ee2-68a4-cd8f4910c3e0, 0000:3a:00.0): PCIe link below its maximum: gen 5/5 x8/x16",
		"double-bit-ecc":   "GPU 1 (GPU-a42d3f09-c922-f0dc-f302-b9f5571bea3f, 0000:2a:00.0): 2 uncorrectable ECC errors since the driver loaded",
		"xid-fatal-reboot": "GPU 3 (GPU-1df05cf8-a84c-f9f2-ba7d-b11012eec015, 0000:5d:00.0): Xid 74: NVRM: Xid (PCI:0000:5d:00): 74, pid='<unknown>', name=<unknown>, NVLink: fatal error detected on link 3(0x10000, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0)",
	}
	for rule, msg := range want {
		if p := problem(t, res, rule); p.Message != msg {
			t.Errorf("%s: message\n got %q\nwant %q", rule, p.Message, msg)
		}
	}
	if p := problem(t, res, "nvlink-down"); p.Value != "[3]" {
		t.Errorf("nvlink-down Value = %#v, want the printed list", p.Value)
	}
	if p := problem(t, res, "double-bit-ecc"); p.Value != int64(2) {
		t.Errorf("double-bit-ecc Value = %#v, want int64(2)", p.Value)
	}
}
