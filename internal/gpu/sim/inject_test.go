package sim

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuheal/gpuheal/internal/gpu"
)

type params = map[string]string

// rxErr and badTLP are the four records of one corrected AER report for
// GPU 3 (0000:5d:00.0) of an H100 node.
var (
	rxErr = []logLine{
		li("pcieport 0000:5c:01.0: AER: Corrected error received: 0000:5d:00.0"),
		lw("nvidia 0000:5d:00.0: PCIe Bus Error: severity=Corrected, type=Physical Layer, (Receiver ID)"),
		lw("nvidia 0000:5d:00.0:   device [10de:2330] error status/mask=00000001/00002000"),
		lw("nvidia 0000:5d:00.0:    [ 0] RxErr                  (First)"),
	}
	badTLP = []logLine{
		li("pcieport 0000:5c:01.0: AER: Corrected error received: 0000:5d:00.0"),
		lw("nvidia 0000:5d:00.0: PCIe Bus Error: severity=Corrected, type=Data Link Layer, (Receiver ID)"),
		lw("nvidia 0000:5d:00.0:   device [10de:2330] error status/mask=00000040/00002000"),
		lw("nvidia 0000:5d:00.0:    [ 6] BadTLP                 (First)"),
	}
)

func TestInject(t *testing.T) {
	tests := []struct {
		name  string
		opts  Options
		fault Fault
		check func(t *testing.T, s *gpu.NodeSnapshot)
		log   []logLine
		xid   uint64 // Xid event expected on the fault's GPU, 0 for none
	}{{
		name:  "xid with defaults",
		fault: Fault{Kind: KindXid, GPU: 0, Params: params{"code": "119"}},
		log:   []logLine{lw("NVRM: Xid (PCI:0000:18:00): 119, pid='<unknown>', name=<unknown>, Timeout after 6s of waiting for RPC response from GPU0 GSP! Expected function 76 (GSP_RM_CONTROL) (0x20801813 0x4c).")},
		xid:   119,
	}, {
		name:  "xid with process and message",
		fault: Fault{Kind: KindXid, GPU: 1, Params: params{"code": "13", "pid": "2924364", "name": "pt_main_thread", "message": "Graphics Exception: ESR 0x546fb0=0x11f000e"}},
		log:   []logLine{lw("NVRM: Xid (PCI:0000:2a:00): 13, pid=2924364, name=pt_main_thread, Graphics Exception: ESR 0x546fb0=0x11f000e")},
		xid:   13,
	}, {
		name:  "xid 94 prints pid only",
		fault: Fault{Kind: KindXid, GPU: 0, Params: params{"code": "94", "pid": "7194"}},
		log:   []logLine{lw("NVRM: Xid (PCI:0000:18:00): 94, pid=7194, Contained: CE User Channel (0x9). RST: No, D-RST: No")},
		xid:   94,
	}, {
		name:  "xid of a code without template",
		fault: Fault{Kind: KindXid, GPU: 0, Params: params{"code": "999"}},
		log:   []logLine{lw("NVRM: Xid (PCI:0000:18:00): 999, pid='<unknown>', name=<unknown>, simulated Xid")},
		xid:   999,
	}, {
		name:  "sbe is silent",
		fault: Fault{Kind: KindSBE, GPU: 2, Params: params{"count": "5"}},
		check: func(t *testing.T, s *gpu.NodeSnapshot) {
			e := s.GPUs[2].ECC
			if *e.VolatileCorrected != 5 || *e.AggregateCorrected != 5 || *e.VolatileUncorrected != 0 {
				t.Errorf("ecc = %d/%d/%d", *e.VolatileCorrected, *e.AggregateCorrected, *e.VolatileUncorrected)
			}
		},
	}, {
		name:  "dbe",
		fault: Fault{Kind: KindDBE, GPU: 1},
		check: func(t *testing.T, s *gpu.NodeSnapshot) {
			e := s.GPUs[1].ECC
			if *e.VolatileUncorrected != 1 || *e.AggregateUncorrected != 1 {
				t.Errorf("ecc = %d/%d", *e.VolatileUncorrected, *e.AggregateUncorrected)
			}
		},
		log: []logLine{lw("NVRM: Xid (PCI:0000:2a:00): 48, pid='<unknown>', name=<unknown>, An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 3, subpartition 1.")},
		xid: 48,
	}, {
		name:  "row remap pending",
		fault: Fault{Kind: KindRowRemapPending, GPU: 2},
		check: func(t *testing.T, s *gpu.NodeSnapshot) {
			if diff := cmp.Diff(&gpu.RemappedRows{Uncorrectable: 1, Pending: true}, s.GPUs[2].RemappedRows); diff != "" {
				t.Errorf("remapped rows (-want +got):\n%s", diff)
			}
		},
		log: []logLine{lw("NVRM: Xid (PCI:0000:3a:00): 63, pid='<unknown>', Row Remapper: New row marked for remapping, reset gpu to activate.")},
		xid: 63,
	}, {
		name:  "row remap pending, correctable",
		fault: Fault{Kind: KindRowRemapPending, GPU: 2, Params: params{"cause": "correctable"}},
		check: func(t *testing.T, s *gpu.NodeSnapshot) {
			if diff := cmp.Diff(&gpu.RemappedRows{Correctable: 1, Pending: true}, s.GPUs[2].RemappedRows); diff != "" {
				t.Errorf("remapped rows (-want +got):\n%s", diff)
			}
		},
		log: []logLine{lw("NVRM: Xid (PCI:0000:3a:00): 63, pid='<unknown>', Row Remapper: New row marked for remapping, reset gpu to activate.")},
		xid: 63,
	}, {
		name:  "row remap failure",
		fault: Fault{Kind: KindRowRemapFailure, GPU: 2},
		check: func(t *testing.T, s *gpu.NodeSnapshot) {
			if !s.GPUs[2].RemappedRows.Failure {
				t.Error("Failure not set")
			}
		},
		log: []logLine{lw("NVRM: Xid (PCI:0000:3a:00): 64, pid='<unknown>', Row Remapper Error: (0x000000008f88f660) - All reserved rows for bank are remapped")},
		xid: 64,
	}, {
		name:  "retired pages on V100",
		opts:  Options{Model: "V100"},
		fault: Fault{Kind: KindRetiredPages, GPU: 0, Params: params{"sbe": "2", "dbe": "1"}},
		check: func(t *testing.T, s *gpu.NodeSnapshot) {
			if diff := cmp.Diff(&gpu.RetiredPages{SingleBit: 2, DoubleBit: 1, Pending: true}, s.GPUs[0].RetiredPages); diff != "" {
				t.Errorf("retired pages (-want +got):\n%s", diff)
			}
		},
		log: []logLine{lw("NVRM: Xid (PCI:0000:18:00): 63, pid='<unknown>', ECC page retirement recording event")},
		xid: 63,
	}, {
		name:  "pcie replay burst",
		fault: Fault{Kind: KindPCIeReplay, GPU: 3, Params: params{"count": "100"}},
		check: func(t *testing.T, s *gpu.NodeSnapshot) {
			if got := *s.GPUs[3].PCIe.ReplayCounter; got != 100 {
				t.Errorf("replay counter = %d", got)
			}
		},
		log: concat(rxErr, badTLP, rxErr, badTLP),
	}, {
		name:  "pcie replay single",
		fault: Fault{Kind: KindPCIeReplay, GPU: 3},
		log:   rxErr,
	}, {
		name:  "pcie downgrade",
		fault: Fault{Kind: KindPCIeDowngrade, GPU: 4, Params: params{"gen": "4", "width": "8"}},
		check: func(t *testing.T, s *gpu.NodeSnapshot) {
			p := s.GPUs[4].PCIe
			if *p.LinkGenCurrent != 4 || *p.LinkWidthCurrent != 8 || *p.LinkGenMax != 5 || *p.LinkWidthMax != 16 {
				t.Errorf("link = gen %d x%d of gen %d x%d", *p.LinkGenCurrent, *p.LinkWidthCurrent, *p.LinkGenMax, *p.LinkWidthMax)
			}
		},
		log: []logLine{li("pci 0000:9a:00.0: 126.024 Gb/s available PCIe bandwidth, limited by 16.0 GT/s PCIe x8 link at 0000:99:01.0 (capable of 504.112 Gb/s with 32.0 GT/s PCIe x16 link)")},
	}, {
		name:  "pcie downgrade on A100, width only",
		opts:  Options{Model: "A100"},
		fault: Fault{Kind: KindPCIeDowngrade, GPU: 0, Params: params{"width": "4"}},
		log:   []logLine{li("pci 0000:18:00.0: 63.012 Gb/s available PCIe bandwidth, limited by 16.0 GT/s PCIe x4 link at 0000:17:01.0 (capable of 252.048 Gb/s with 16.0 GT/s PCIe x16 link)")},
	}, {
		name:  "nvlink down",
		fault: Fault{Kind: KindNVLinkDown, GPU: 5, Params: params{"link": "6"}},
		check: func(t *testing.T, s *gpu.NodeSnapshot) {
			l := s.GPUs[5].NVLink
			if l[6].Active || !l[5].Active {
				t.Errorf("links 5/6 active = %v/%v", l[5].Active, l[6].Active)
			}
		},
		log: []logLine{lw("NVRM: Xid (PCI:0000:ab:00): 74, pid='<unknown>', name=<unknown>, NVLink: fatal error detected on link 6(0x10000, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0)")},
		xid: 74,
	}, {
		name:  "nvlink errors are silent",
		fault: Fault{Kind: KindNVLinkErrors, GPU: 5, Params: params{"link": "2", "crc": "10", "crc-data": "3", "replay": "4", "recovery": "1"}},
		check: func(t *testing.T, s *gpu.NodeSnapshot) {
			l := s.GPUs[5].NVLink[2]
			got := []uint64{*l.CRCFlit, *l.CRCData, *l.Replay, *l.Recovery}
			if diff := cmp.Diff([]uint64{10, 3, 4, 1}, got); diff != "" || !l.Active {
				t.Errorf("link 2 counters (-want +got):\n%s", diff)
			}
		},
	}, {
		name:  "thermal slowdown",
		fault: Fault{Kind: KindThermalSlowdown, GPU: 6, Params: params{"temp": "93"}},
		check: func(t *testing.T, s *gpu.NodeSnapshot) {
			g := s.GPUs[6]
			if *g.ClockEventReasons != gpu.ClockEventHwThermal|gpu.ClockEventHwSlowdown {
				t.Errorf("clock reasons = %#x", *g.ClockEventReasons)
			}
			if temp := *g.TemperatureCelsius; temp < 92 || temp > 94 {
				t.Errorf("temperature = %v", temp)
			}
		},
	}, {
		name:  "power brake",
		fault: Fault{Kind: KindPowerBrake, GPU: 7},
		check: func(t *testing.T, s *gpu.NodeSnapshot) {
			if got := *s.GPUs[7].ClockEventReasons; got != gpu.ClockEventHwPowerBrake|gpu.ClockEventHwSlowdown {
				t.Errorf("clock reasons = %#x", got)
			}
		},
	}, {
		name:  "fell off the bus",
		fault: Fault{Kind: KindFellOffBus, GPU: 6},
		check: func(t *testing.T, s *gpu.NodeSnapshot) {
			g := s.GPUs[6]
			if !g.Missing || g.TemperatureCelsius != nil || g.UUID == "" || len(g.Errors) != 1 || s.FoundGPUs != 8 {
				t.Errorf("gpu 6 = missing %v temp %v uuid %q errors %v; found %d", g.Missing, g.TemperatureCelsius, g.UUID, g.Errors, s.FoundGPUs)
			}
		},
		log: []logLine{
			lw("NVRM: Xid (PCI:0000:ba:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."),
			lw("NVRM: The NVIDIA GPU 0000:ba:00.0\nNVRM: (PCI ID: 10de:2330) installed in this system has\nNVRM: fallen off the bus and is not responding to commands."),
		},
		xid: 79,
	}, {
		name:  "gpu missing",
		fault: Fault{Kind: KindGPUMissing, GPU: 3},
		check: func(t *testing.T, s *gpu.NodeSnapshot) {
			if s.FoundGPUs != 7 || len(s.GPUs) != 7 || s.ExpectedGPUs != 8 || s.GPUs[3].Index != 4 {
				t.Errorf("found %d, listed %d, expected %d", s.FoundGPUs, len(s.GPUs), s.ExpectedGPUs)
			}
			for _, d := range s.DeviceNodes {
				if d == "/dev/nvidia3" {
					t.Error("/dev/nvidia3 still present")
				}
			}
		},
	}, {
		name:  "driver version change",
		fault: Fault{Kind: KindDriverVersionChange, Params: params{"version": "575.57.08"}},
		check: func(t *testing.T, s *gpu.NodeSnapshot) {
			if s.DriverVersion != "575.57.08" || s.KernelModuleVersion != "570.133.20" || s.CUDADriverVersion != "12.9" {
				t.Errorf("driver/module/cuda = %s/%s/%s", s.DriverVersion, s.KernelModuleVersion, s.CUDADriverVersion)
			}
		},
		log: []logLine{lw("NVRM: API mismatch: the client has the version 575.57.08, but\nNVRM: this kernel module has the version 570.133.20.  Please\nNVRM: make sure that this kernel module and all NVIDIA driver\nNVRM: components have the same version.")},
	}, {
		name:  "fabric manager stopped",
		fault: Fault{Kind: KindFabricManagerStopped},
		check: func(t *testing.T, s *gpu.NodeSnapshot) {
			if s.FabricManager != "stopped" {
				t.Errorf("fabric manager = %q", s.FabricManager)
			}
		},
	}, {
		name:  "recovery action",
		fault: Fault{Kind: KindRecoveryAction, GPU: 7, Params: params{"action": "drain-and-reset"}},
		check: func(t *testing.T, s *gpu.NodeSnapshot) {
			g := s.GPUs[7]
			if *g.RecoveryAction != gpu.RecoveryDrainAndReset || !*g.ResetRequired || !*g.DrainAndResetRecommended {
				t.Errorf("recovery %v reset %v drain %v", *g.RecoveryAction, *g.ResetRequired, *g.DrainAndResetRecommended)
			}
			if g.XidEvents[0].Data != 4 {
				t.Errorf("Xid 154 data = %d", g.XidEvents[0].Data)
			}
		},
		log: []logLine{lw("NVRM: Xid (PCI:0000:db:00): 154, GPU recovery action changed from 0x0 (None) to 0x4 (Drain and Reset)")},
		xid: 154,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n, _ := newTestNode(t, tc.opts)
			if err := n.Inject(tc.fault); err != nil {
				t.Fatalf("Inject: %v", err)
			}
			if diff := cmp.Diff(tc.log, logLines(n.KernelLog(0))); diff != "" {
				t.Errorf("kernel log (-want +got):\n%s", diff)
			}
			s := snapshot(t, n)
			if tc.check != nil {
				tc.check(t, s)
			}
			if tc.fault.Kind == KindGPUMissing || kindInfo[tc.fault.Kind].node {
				return
			}
			g := s.GPUs[tc.fault.GPU]
			var got []uint64
			for _, e := range g.XidEvents {
				got = append(got, e.Xid)
			}
			var want []uint64
			if tc.xid != 0 {
				want = []uint64{tc.xid}
				if g.XidTotals[tc.xid] != 1 {
					t.Errorf("XidTotals = %v", g.XidTotals)
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Xid events (-want +got):\n%s", diff)
			}
		})
	}
}

func concat(parts ...[]logLine) []logLine {
	var out []logLine
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}
