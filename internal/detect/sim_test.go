package detect

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	fakeclock "k8s.io/utils/clock/testing"

	"github.com/gpuheal/gpuheal/internal/fabric"
	"github.com/gpuheal/gpuheal/internal/finding"
	"github.com/gpuheal/gpuheal/internal/gpu/sim"
)

// TestSimFaults injects every fault kind of the simulator and checks what
// the detector makes of the kernel-log records the sim writes, delivered
// both ways: one record per message (/dev/kmsg, multi-line records joined
// by "\n") and one line per message (text dmesg, continuations indented).
// A new sim fault kind fails this test until it is added here.
func TestSimFaults(t *testing.T) {
	const gpu3 = "0000:5d:00.0" // GPU 3 of the sim's HGX board
	x := func(code uint64, sev finding.Severity, act finding.Action) one {
		return one{xidCode(code), code, gpu3, sev, act}
	}
	type p = map[string]string
	tests := []struct {
		name  string
		model string
		fault sim.Fault
		want  []one
	}{
		{"xid 13", "", sim.Fault{Kind: sim.KindXid, GPU: 3, Params: p{"code": "13"}}, []one{x(13, warning, restartApp)}},
		{"xid 31", "", sim.Fault{Kind: sim.KindXid, GPU: 3, Params: p{"code": "31", "pid": "4242", "name": "python3"}}, []one{x(31, info, restartApp)}},
		{"xid 43", "", sim.Fault{Kind: sim.KindXid, GPU: 3, Params: p{"code": "43"}}, []one{x(43, info, none)}},
		{"xid 45", "", sim.Fault{Kind: sim.KindXid, GPU: 3, Params: p{"code": "45"}}, []one{x(45, info, none)}},
		{"xid 92", "", sim.Fault{Kind: sim.KindXid, GPU: 3, Params: p{"code": "92"}}, []one{x(92, warning, none)}},
		{"xid 94", "", sim.Fault{Kind: sim.KindXid, GPU: 3, Params: p{"code": "94"}}, []one{x(94, warning, restartApp)}},
		{"xid 95", "", sim.Fault{Kind: sim.KindXid, GPU: 3, Params: p{"code": "95"}}, []one{x(95, fatal, resetGPU)}},
		{"xid 119", "", sim.Fault{Kind: sim.KindXid, GPU: 3, Params: p{"code": "119"}}, []one{x(119, fatal, resetGPU)}},
		{"xid 149", "", sim.Fault{Kind: sim.KindXid, GPU: 3, Params: p{"code": "149"}}, []one{x(149, fatal, resetGPU)}},
		{"xid 154", "", sim.Fault{Kind: sim.KindXid, GPU: 3, Params: p{"code": "154", "data": "2"}}, []one{x(154, fatal, reboot)}},
		{"xid unknown", "", sim.Fault{Kind: sim.KindXid, GPU: 3, Params: p{"code": "999"}}, []one{x(999, unknown, none)}},
		{"xid custom message", "", sim.Fault{Kind: sim.KindXid, GPU: 3, Params: p{"code": "79", "message": "GPU has fallen off the bus."}}, []one{x(79, fatal, reboot)}},
		{"dbe", "", sim.Fault{Kind: sim.KindDBE, GPU: 3}, []one{x(48, fatal, resetGPU)}},
		{"row-remap-pending", "", sim.Fault{Kind: sim.KindRowRemapPending, GPU: 3}, []one{x(63, warning, none)}},
		{"row-remap-failure", "", sim.Fault{Kind: sim.KindRowRemapFailure, GPU: 3}, []one{x(64, fatal, replace)}},
		{"retired-pages", "V100-SXM2-32GB", sim.Fault{Kind: sim.KindRetiredPages, GPU: 3, Params: p{"dbe": "1"}}, []one{x(63, warning, none)}},
		{"pcie-replay", "", sim.Fault{Kind: sim.KindPCIeReplay, GPU: 3, Params: p{"count": "2"}}, []one{
			{"PCIE_AER", 0, gpu3, warning, none}, {"PCIE_AER", 0, gpu3, warning, none}}},
		{"pcie-downgrade", "", sim.Fault{Kind: sim.KindPCIeDowngrade, GPU: 3, Params: p{"gen": "3"}}, []one{{"PCIE_LINK_DEGRADED", 0, gpu3, warning, none}}},
		{"nvlink-down", "", sim.Fault{Kind: sim.KindNVLinkDown, GPU: 3, Params: p{"link": "2"}}, []one{x(74, fatal, reboot)}},
		{"fell-off-bus", "", sim.Fault{Kind: sim.KindFellOffBus, GPU: 3}, []one{x(79, fatal, reboot), {"GPU_FELL_OFF_BUS", 0, gpu3, fatal, reboot}}},
		{"driver-version-change", "", sim.Fault{Kind: sim.KindDriverVersionChange, Params: p{"version": "575.57.08"}}, []one{{"DRIVER_MISMATCH", 0, "", fatal, reboot}}},
		{"recovery-action", "", sim.Fault{Kind: sim.KindRecoveryAction, GPU: 3, Params: p{"action": "drain-and-reset"}}, []one{x(154, fatal, resetGPU)}},
		// Faults the kernel is silent about.
		{"sbe", "", sim.Fault{Kind: sim.KindSBE, GPU: 3}, nil},
		{"nvlink-errors", "", sim.Fault{Kind: sim.KindNVLinkErrors, GPU: 3, Params: p{"link": "1", "crc": "5"}}, nil},
		{"thermal-slowdown", "", sim.Fault{Kind: sim.KindThermalSlowdown, GPU: 3}, nil},
		{"power-brake", "", sim.Fault{Kind: sim.KindPowerBrake, GPU: 3}, nil},
		{"gpu-missing", "", sim.Fault{Kind: sim.KindGPUMissing, GPU: 3}, nil},
		{"fabric-manager-stopped", "", sim.Fault{Kind: sim.KindFabricManagerStopped}, nil},
		// Latent: nothing logged until it surfaces (as fell-off-bus or dbe, above).
		{"latent", "", sim.Fault{Kind: sim.KindLatent, GPU: 3, Params: p{"mode": "nccl-bandwidth"}}, nil},
		// The RDMA fabric's: only a port that loses its cable logs (the
		// ConnectX module event, on the adapter, no GPU); the rest show
		// in the counters only.
		{"fabric-port-down", "", sim.Fault{Kind: sim.KindFabricPortDown, Params: p{"device": "3"}}, []one{{"MLX5_CABLE_UNPLUGGED", 0, "", warning, none}}},
		{"fabric-link-flap", "", sim.Fault{Kind: sim.KindFabricLinkFlap}, nil},
		{"fabric-symbol-errors", "", sim.Fault{Kind: sim.KindFabricSymbolErrors}, nil},
		{"fabric-degraded-rate", "", sim.Fault{Kind: sim.KindFabricDegradedRate}, nil},
		{"fabric-device-missing", "", sim.Fault{Kind: sim.KindFabricDeviceMissing}, nil},
		{"efa-errors", "", sim.Fault{Kind: sim.KindEFAErrors}, nil},
	}
	covered := map[sim.Kind]bool{}
	for _, tt := range tests {
		covered[tt.fault.Kind] = true
		t.Run(tt.name, func(t *testing.T) {
			n, err := sim.New(sim.Options{Model: tt.model, Fabric: fabricFor(tt.fault.Kind), Clock: fakeclock.NewFakeClock(t0)})
			if err != nil {
				t.Fatal(err)
			}
			defer n.Close()
			before := len(n.KernelLog(0))
			if err := n.Inject(tt.fault); err != nil {
				t.Fatal(err)
			}
			recs := n.KernelLog(0)[before:]
			var byRecord, byLine []finding.Finding
			d1, d2 := newDetector(t), newDetector(t)
			for _, r := range recs {
				byRecord = d1.Append(byRecord, r.Message, t0)
				for _, l := range strings.Split(r.Dmesg(), "\n") {
					byLine = d2.Append(byLine, dmesgText(l), t0)
				}
			}
			for how, got := range map[string][]finding.Finding{"per record": byRecord, "per dmesg line": byLine} {
				if diff := cmp.Diff(tt.want, shorten(got), cmp.AllowUnexported(one{})); diff != "" {
					t.Errorf("%s, records %+v (-want +got):\n%s", how, recs, diff)
				}
			}
		})
	}
	for _, k := range sim.Kinds() {
		if !covered[k] {
			t.Errorf("sim fault kind %q is not covered by this test", k)
		}
	}
}

// fabricFor is the fabric a fault kind needs: none for a GPU's, 8
// ConnectX HCAs for the fabric's, EFA devices for efa-errors.
func fabricFor(k sim.Kind) sim.FabricOptions {
	switch {
	case k == sim.KindEFAErrors:
		return sim.FabricOptions{Devices: sim.EFADevicesP5, Kind: fabric.KindEFA}
	case sim.IsFabricKind(k):
		return sim.FabricOptions{Devices: sim.InfiniBandDevices}
	}
	return sim.FabricOptions{}
}

// dmesgText drops the "[  600.000123] " of a dmesg line; continuation lines
// keep their indentation, as a text reader may hand them on.
func dmesgText(l string) string {
	if strings.HasPrefix(l, "[") {
		if _, msg, ok := strings.Cut(l, "] "); ok {
			return msg
		}
	}
	return l
}

func shorten(fs []finding.Finding) []one {
	var out []one
	for _, f := range fs {
		out = append(out, one{f.Code, f.Xid, f.GPU, f.Severity, f.Action})
	}
	return out
}
