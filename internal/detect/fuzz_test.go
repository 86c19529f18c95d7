package detect

import (
	"strings"
	"testing"
	"time"

	"github.com/gpuheal/gpuheal/internal/termsafe"
	"github.com/gpuheal/gpuheal/internal/xid"
)

// FuzzDetect feeds arbitrary messages, two per run so multi-line state is
// exercised: the detector must never panic, and every finding must use
// the shared vocabulary. An Xid or SXid finding must come from a line that
// starts with its driver's own prefix.
func FuzzDetect(f *testing.F) {
	seeds := []string{
		"NVRM: Xid (PCI:0000:05:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
		"NVRM: Xid (PCI:0000:01:00 GPU-I:05): 94, pid=7194, Contained: CE User Channel (0x9). RST: No, D-RST: No",
		"NVRM: Xid (PCI:0009:01:00): 154, GPU recovery action changed from 0x0 (None) to 0x4 (Drain and Reset)",
		"NVRM: Xid (PCI:0009:01:00): 149, NETIR_LINK_EVT  Fatal   XC0 i0 Link 01 (0x021425c6 0x00000000)",
		"NVRM: Xid (PCI:0000:38:00): 13",
		"NVRM: The NVIDIA GPU 0000:b3:00.0\nNVRM: (PCI ID: 10de:26b5) installed in this system has\nNVRM: fallen off the bus and is not responding to commands.",
		"NVRM: API mismatch: the client has the version 575.57.08, but\nNVRM: this kernel module has the version 570.133.20.  Please",
		"nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 20034, Fatal, Link 30 LTSSM Fault Up",
		"nvidia 0000:18:00.0: PCIe Bus Error: severity=Uncorrected (Fatal), type=Transaction Layer, (Requester ID)",
		"pci 0000:18:00.0: 63.008 Gb/s available PCIe bandwidth, limited by 8.0 GT/s PCIe x8 link at 0000:17:01.0",
		"nvidia: probe of 0000:01:00.0 failed with error -1",
		"watchdog: BUG: soft lockup - CPU#12 stuck for 23s! [python:1234]",
		"INFO: task python:1234 blocked for more than 120 seconds.",
		"nf_conntrack: table full, dropping packet",
		"oom-kill:constraint=CONSTRAINT_MEMCG,task=python,pid=4242,uid=0",
		"Out of memory: Killed process 4242 (python)",
		"NVRM: Xid (",
		"SXid (",
		"python[1234]: NVRM: Xid (PCI:0000:05:00): 79, pid=1, GPU has fallen off the bus.",
		"Out of memory: Killed process 4242 (NVRM: Xid (PCI:) total-vm:100kB",
		"app: nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 20034, Fatal, Link 30",
		"mlx5_core 0000:41:00.1: Port module event: module 1, Cable unplugged",
		"mlx5_core 0000:0c:00.0: mlx5_port_module_event:1132:(pid 0): Port module event[error]: module 0, Cable error, Bus stuck (I2C or data shorted)",
		"mlx5_core 0000:5c:00.0: mlx5_port_module_event:1131:(pid 0): Port module event[error]: module 0, Cable error, High Temperature",
		"mlx5_core 0000:41:00.0 enp65s0f0np0: Link down",
		"mlx5_core 0000:73:00.0: poll_health:1151:(pid 0): device's health compromised - reached miss count",
		"mlx5_core 0000:73:00.0: print_health_info:453:(pid 0): Health issue observed, firmware internal error, severity(3) ERROR:",
		"mlx5_core 0001:00:00.0: poll_health:695:(pid 3222): Fatal error 1 detected\nmlx5_core 0001:00:00.0: print_health_info:384:(pid 3222): synd 0xff: unrecognized error",
		"mlx5_core 0000:56:00.0: wait_func:1189:(pid 72061): ACCESS_REG(0x805) timeout. Will cause a leak of a command resource",
		"mlx5_core 0004:01:00.0: mlx5_pci_err_detected Device state = 2 pci_status: 0. Exit, result = 3, need reset",
		"mlx5_core 0000:03:00.0: 0000:03:00.0:handle_hca_cap:438:(pid 6016): x",
		"mlx5_core :(pid ): ",
		"efa 0000:a0:1a.0 rdmap160s26: Failed to process command DEREG_MR (opcode 8) comp_status 7 err -22",
		"infiniband rdmap16s27: The device didn't send any completion for admin cmd CREATE_QP(6) status 0",
		"efa 0000:00:06.0: EFA device init failed",
		"infiniband efa_0: Admin queue is closed",
		"python[1234]: mlx5_core 0000:41:00.1: Port module event: module 1, Cable unplugged",
		"ena 0000:00:05.0: Reset indication didn't turn on",
		"efa ",
		"infiniband : ",
		"",
	}
	for i, s := range seeds {
		f.Add(s, seeds[(i+1)%len(seeds)])
	}
	d := New(xid.Default(), Options{})
	f.Fuzz(func(t *testing.T, a, b string) {
		for _, m := range []string{a, b} {
			for _, got := range d.Detect(m, time.Unix(1_700_000_000, 0)) {
				if got.Code == "" || got.Source != "kmsg" || got.Severity.Rank() == 0 || got.Action.Rank() < 0 {
					t.Fatalf("Detect(%q) gave a malformed finding %+v", m, got)
				}
				if termsafe.Clean(got.Message) != got.Message {
					t.Fatalf("Detect(%q) kept control characters in %q", m, got.Message)
				}
				if got.Xid != 0 && !isDriverLine(got.Message, nvrmPrefix) || got.Code == CodeSXid && !isDriverLine(got.Message, nvswitchPrefix) {
					t.Fatalf("Detect(%q) took %q for a driver report: %+v", m, got.Message, got)
				}
				// The fabric is never a GPU, and its findings name the
				// device and come only from its drivers' own lines.
				fabric := strings.HasPrefix(got.Code, "MLX5_") || strings.HasPrefix(got.Code, "EFA_")
				if got.Device != "" && (got.GPU != "" || !fabric) || fabric && got.Device == "" {
					t.Fatalf("Detect(%q) gave a fabric finding with GPU or without a device: %+v", m, got)
				}
				if strings.HasPrefix(got.Code, "MLX5_") && !isDriverLine(got.Message, mlx5Prefix) ||
					strings.HasPrefix(got.Code, "EFA_") && !isEFALine(got.Message) {
					t.Fatalf("Detect(%q) took %q for a fabric driver's report: %+v", m, got.Message, got)
				}
			}
		}
	})
}

// FuzzFabricManager feeds arbitrary lines to the Fabric Manager log
// detector: no panic, and every finding is an FM code from a line that
// parses as an ERROR or FATAL record, node-level, with its time.
func FuzzFabricManager(f *testing.F) {
	for _, s := range []string{
		"[Feb 27 2025 15:10:02] [ERROR] [tid 12727] detected NVSwitch non-fatal error 12028 on fid 0 on NVSwitch pci bus id 00000000:86:00.0 physical id 3 port 61",
		"[Jul 23 2024 07:53:55] [ERROR] [tid 841] detected NVSwitch fatal error 20034 on fid 0 on NVSwitch pci bus id 00000000:86:00.0 physical id 3 port 33",
		"[Sep 17 2024 06:01:46] [ERROR] [tid 1230079] failed to find the GPU handle 5410063385821516767 in the multicast team request setup 6130285411925746235.",
		"[Oct 13 2025 18:14:38] [ERROR] [tid 202] Fabric Manager detected GPU NVL Fatal error on :",
		"[Feb 25 2025 13:59:45] [INFO] [tid 1803] Received an inband message:  Message header details: magic Id:adbc",
		"Message payload details:Team release request: Team Handle:99c9f23d49236386 Flags:0",
		"[Feb  5 2025 01:02:03] [FATAL] [tid 7] x",
		"[Feb 27 2025 15:10:02] [ERROR] [tid ] pci bus id zz",
		"[] [ERROR] [",
		"[",
		"",
	} {
		f.Add(s)
	}
	m := NewFabricManager(FMOptions{Location: time.UTC})
	f.Fuzz(func(t *testing.T, line string) {
		for _, got := range m.Detect(line) {
			l, ok := parseFMLine(line, time.UTC)
			if !ok || l.level != "ERROR" && l.level != "FATAL" {
				t.Fatalf("Detect(%q) gave %+v from a line that is no ERROR record", line, got)
			}
			if !strings.HasPrefix(got.Code, "FM_") || got.Source != "fabricmanager" || got.GPU != "" || got.Time.IsZero() ||
				got.Severity.Rank() == 0 || got.Action.Rank() < 0 {
				t.Fatalf("Detect(%q) gave a malformed finding %+v", line, got)
			}
			if termsafe.Clean(got.Message) != got.Message {
				t.Fatalf("Detect(%q) kept control characters in %q", line, got.Message)
			}
		}
	})
}
