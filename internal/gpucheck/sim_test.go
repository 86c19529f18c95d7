package gpucheck

import (
	"context"
	"slices"
	"testing"
	"time"

	testclock "k8s.io/utils/clock/testing"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/fabric"
	"github.com/gpuheal/gpuheal/internal/gpu"
	"github.com/gpuheal/gpuheal/internal/gpu/sim"
)

// simSnapshot reads an 8-GPU sim node of model with faults injected; load
// puts every answering GPU at 95 % utilization (the sim's GPUs idle).
func simSnapshot(t *testing.T, model string, load bool, faults ...sim.Fault) *gpu.NodeSnapshot {
	t.Helper()
	return simFabricSnapshot(t, model, sim.FabricOptions{}, load, faults...)
}

// simFabricSnapshot is simSnapshot on a node with an RDMA fabric.
func simFabricSnapshot(t *testing.T, model string, fab sim.FabricOptions, load bool, faults ...sim.Fault) *gpu.NodeSnapshot {
	t.Helper()
	n, err := sim.New(sim.Options{NodeName: "gpu-0", Model: model, Fabric: fab, Clock: testclock.NewFakeClock(time.Date(2026, 12, 1, 11, 0, 0, 0, time.UTC))})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range faults {
		if err := n.Inject(f); err != nil {
			t.Fatal(err)
		}
	}
	s, err := n.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if load {
		for i := range s.GPUs {
			if !s.GPUs[i].Missing {
				s.GPUs[i].UtilizationGPUPercent = gpu.F64(95)
			}
		}
	}
	return s
}

func failed(checks []v1alpha1.AgentCheck) []string {
	var out []string
	for _, c := range checks {
		if !c.Passed {
			out = append(out, c.Name)
		}
	}
	return out
}

// TestHealthySimNodesPassEveryCheck: every sim model, idle and loaded,
// passes all eight checks, reported in the contract's order.
func TestHealthySimNodesPassEveryCheck(t *testing.T) {
	for _, model := range sim.Models() {
		for _, load := range []bool{false, true} {
			checks := Judge(simSnapshot(t, model, load))
			names := make([]string, len(checks))
			for i, c := range checks {
				names[i] = c.Name
			}
			if !slices.Equal(names, v1alpha1.AgentCheckNames) {
				t.Fatalf("%s: checks %v, want %v", model, names, v1alpha1.AgentCheckNames)
			}
			if f := failed(checks); len(f) > 0 {
				t.Errorf("%s (load %v): a healthy node fails %v: %+v", model, load, f, checks)
			}
		}
	}
}

// TestEachSimFaultFailsExactlyItsCheck injects each sim fault into a
// loaded node and expects exactly the check that fault breaks to fail;
// the faults the gate does not judge (counters, throttling, Xid events,
// which the health rules watch) fail none. A fault kind not in the table
// is expected to fail none either: a latent fault shows only under a
// check's load, never in the passive readings.
func TestEachSimFaultFailsExactlyItsCheck(t *testing.T) {
	const h100, v100 = "H100-80GB-HBM3", "V100-SXM2-32GB"
	type c struct {
		model  string
		params map[string]string
		fails  string
	}
	table := map[sim.Kind]c{
		sim.KindXid:                  {h100, map[string]string{"code": "13"}, ""},
		sim.KindSBE:                  {h100, nil, ""},
		sim.KindDBE:                  {h100, nil, v1alpha1.AgentCheckNoVolatileECC},
		sim.KindRowRemapPending:      {h100, nil, v1alpha1.AgentCheckNoRowRemapPending},
		sim.KindRowRemapFailure:      {h100, nil, v1alpha1.AgentCheckNoRowRemapPending},
		sim.KindRetiredPages:         {v100, map[string]string{"dbe": "2"}, v1alpha1.AgentCheckNoRowRemapPending},
		sim.KindPCIeReplay:           {h100, nil, ""},
		sim.KindPCIeDowngrade:        {h100, map[string]string{"gen": "3"}, v1alpha1.AgentCheckPCIeLinkAtMax},
		sim.KindNVLinkDown:           {h100, map[string]string{"link": "5"}, v1alpha1.AgentCheckNVLinksUp},
		sim.KindNVLinkErrors:         {h100, map[string]string{"link": "5", "crc": "100"}, ""},
		sim.KindThermalSlowdown:      {h100, nil, ""},
		sim.KindPowerBrake:           {h100, nil, ""},
		sim.KindFellOffBus:           {h100, nil, v1alpha1.AgentCheckGPUsPresent},
		sim.KindGPUMissing:           {h100, nil, v1alpha1.AgentCheckGPUsPresent},
		sim.KindDriverVersionChange:  {h100, map[string]string{"version": "575.57.08"}, v1alpha1.AgentCheckDriverVersionsMatch},
		sim.KindFabricManagerStopped: {h100, nil, v1alpha1.AgentCheckFabricHealthy},
		sim.KindRecoveryAction:       {h100, map[string]string{"action": "node-reboot"}, v1alpha1.AgentCheckNoRecoveryPending},
		// A latent fault shows only under a check's load: every agent
		// check passes, which is why the gate runs Job checks too.
		sim.KindLatent: {h100, map[string]string{"mode": "nccl-bandwidth"}, ""},
	}
	for _, kind := range sim.Kinds() {
		tc, ok := table[kind]
		if !ok {
			tc = c{model: h100}
		}
		// No agent check reads the RDMA fabric: a fabric fault, on a node
		// with one, fails none.
		var fab sim.FabricOptions
		if sim.IsFabricKind(kind) {
			fab = sim.FabricOptions{Devices: sim.InfiniBandDevices}
			if kind == sim.KindEFAErrors {
				fab = sim.FabricOptions{Devices: sim.EFADevicesP5, Kind: fabric.KindEFA}
			}
		}
		t.Run(string(kind), func(t *testing.T) {
			checks := Judge(simFabricSnapshot(t, tc.model, fab, true, sim.Fault{Kind: kind, GPU: 3, Params: tc.params}))
			var want []string
			if tc.fails != "" {
				want = []string{tc.fails}
			}
			if got := failed(checks); !slices.Equal(got, want) {
				t.Errorf("fails %v, want %v: %+v", got, want, checks)
			}
		})
	}
}

// TestIdlePCIeDowngradeIsNotJudged: an idle GPU's link trains down to save
// power, so a downgraded link on an idle node passes, saying so.
func TestIdlePCIeDowngradeIsNotJudged(t *testing.T) {
	s := simSnapshot(t, "H100-80GB-HBM3", false, sim.Fault{Kind: sim.KindPCIeDowngrade, GPU: 3, Params: map[string]string{"gen": "3", "width": "8"}})
	c := Judge(s)[5]
	if c.Name != v1alpha1.AgentCheckPCIeLinkAtMax || !c.Passed || c.Message != "idle: not judged" {
		t.Errorf("idle downgraded link: %+v, want passed with %q", c, "idle: not judged")
	}
	s.GPUs[3].UtilizationGPUPercent = gpu.F64(LoadedPercent)
	c = Judge(s)[5]
	want := "PCIe link below its maximum under load: GPU 3 (0000:5d:00.0): gen 3/5 x8/x16 at 30% load"
	if c.Passed || c.Message != want || c.Value != "1 GPU below maximum" {
		t.Errorf("loaded downgraded link: %+v, want failed with %q", c, want)
	}
}
