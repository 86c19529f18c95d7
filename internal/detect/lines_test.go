package detect

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuheal/gpuheal/internal/finding"
)

const (
	fatal   = finding.Fatal
	warning = finding.Warning
	info    = finding.Info
	unknown = finding.Unknown

	none       = finding.ActionNone
	restartApp = finding.ActionRestartApp
	resetGPU   = finding.ActionResetGPU
	reboot     = finding.ActionReboot
	replace    = finding.ActionReplace
)

// one is the finding a line of the table expects: the line itself as the
// message, so the table stays readable.
type one struct {
	code string
	xid  uint64
	gpu  string
	sev  finding.Severity
	act  finding.Action
}

// TestLineForms has one case per line form of NVIDIA's Xid catalog (internal/xid),
// of the sim's lines.go and of the kernel's node-problem reports, each run
// on a fresh Detector.
func TestLineForms(t *testing.T) {
	tests := []struct {
		name string
		line string
		want *one // nil: not a finding
	}{
		// Xid lines of the research page.
		{"79 unknown pid", "NVRM: Xid (PCI:0000:05:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.", &one{"XID79", 79, "0000:05:00.0", fatal, reboot}},
		{"119 numeric pid", "NVRM: Xid (PCI:0000:9b:00): 119, pid=2024380, name=nvidia-smi, Timeout after 6s of waiting for RPC response from GPU4 GSP! Expected function 103 (GSP_RM_ALLOC) (0x2081 0x4).", &one{"XID119", 119, "0000:9b:00.0", fatal, resetGPU}},
		{"13 warp exception", "NVRM: Xid (PCI:0000:38:00): 13, pid='<unknown>', name=<unknown>, Graphics SM Warp Exception on (GPC 9, TPC 1, SM 1): Out Of Range Address", &one{"XID13", 13, "0000:38:00.0", warning, restartApp}},
		{"149 fatal, domain 9", "NVRM: Xid (PCI:0009:01:00): 149, NETIR_LINK_EVT  Fatal   XC0 i0 Link 01 (0x021425c6 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)", &one{"XID149", 149, "0009:01:00.0", fatal, resetGPU}},
		{"154 drain and reset", "NVRM: Xid (PCI:0009:01:00): 154, GPU recovery action changed from 0x0 (None) to 0x4 (Drain and Reset)", &one{"XID154", 154, "0009:01:00.0", fatal, resetGPU}},
		{"94 MIG instance", "NVRM: Xid (PCI:0000:01:00 GPU-I:05): 94, pid=7194, Contained: CE User Channel (0x9). RST: No, D-RST: No", &one{"XID94", 94, "0000:01:00.0", warning, restartApp}},
		{"95 RST yes", "NVRM: Xid (PCI:0000:01:00): 95, pid=7062, Uncontained: LTC TAG (0x2, 0x1). RST: Yes, D-RST: No", &one{"XID95", 95, "0000:01:00.0", fatal, resetGPU}},
		{"63 device 1c", "NVRM: Xid (PCI:0000:10:1c): 63, pid=1896, Row Remapper: New row marked for remapping, reset gpu to activate.", &one{"XID63", 63, "0000:10:1c.0", warning, none}},
		{"64 remap failure", "NVRM: Xid (PCI:0000:0f:00): 64, pid=57530, Row Remapper Error: (0x00000005d28c03a0) - All reserved rows for bank are remapped", &one{"XID64", 64, "0000:0f:00.0", fatal, replace}},
		// More Xid forms.
		{"nothing after the code", "NVRM: Xid (PCI:0000:05:00): 79", &one{"XID79", 79, "0000:05:00.0", fatal, reboot}},
		{"only a comma after the code", "NVRM: Xid (PCI:0000:05:00): 43,", &one{"XID43", 43, "0000:05:00.0", info, none}},
		{"old driver without PCI:", "NVRM: Xid (0000:01:00): 31, Ch 0000000b, engmask 00000120, intr 10000000", &one{"XID31", 31, "0000:01:00.0", info, restartApp}},
		{"name with spaces", "NVRM: Xid (PCI:0000:3b:00): 13, pid=1234, name=python3 train model, Graphics SM Warp Exception on (GPC 0, TPC 0, SM 0): Out Of Range Address", &one{"XID13", 13, "0000:3b:00.0", warning, restartApp}},
		{"upper-case bus", "NVRM: Xid (PCI:0000:B3:00): 48, pid=1, name=x, An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 0, subpartition 0.", &one{"XID48", 48, "0000:b3:00.0", fatal, resetGPU}},
		{"unknown code is reported", "NVRM: Xid (PCI:0000:05:00): 999, pid='<unknown>', name=<unknown>, simulated Xid", &one{"XID999", 999, "0000:05:00.0", unknown, none}},
		{"code above the name table", "NVRM: Xid (PCI:0000:05:00): 4096, something new", &one{"XID4096", 4096, "0000:05:00.0", unknown, none}},
		{"149 nonfatal", "NVRM: Xid (PCI:0009:01:00): 149, NETIR_LINK_EVT  Nonfatal   XC0 i0 Link 01 (0x00000001 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)", &one{"XID149", 149, "0009:01:00.0", info, none}},
		{"154 to none", "NVRM: Xid (PCI:0000:18:00): 154, GPU recovery action changed from 0x4 (Drain and Reset) to 0x0 (None)", &one{"XID154", 154, "0000:18:00.0", info, none}},
		{"154 to reset", "NVRM: Xid (PCI:0000:18:00): 154, GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset)", &one{"XID154", 154, "0000:18:00.0", fatal, resetGPU}},
		{"154 to reboot", "NVRM: Xid (PCI:0000:18:00): 154, GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot)", &one{"XID154", 154, "0000:18:00.0", fatal, reboot}},
		{"154 to drain p2p", "NVRM: Xid (PCI:0000:18:00): 154, GPU recovery action changed from 0x0 (None) to 0x3 (Drain P2P)", &one{"XID154", 154, "0000:18:00.0", warning, restartApp}},
		{"45 sim form", "NVRM: Xid (PCI:0000:18:00): 45, pid='<unknown>', name=<unknown>, Ch 00000008", &one{"XID45", 45, "0000:18:00.0", info, none}},
		{"74 sim form", "NVRM: Xid (PCI:0000:2a:00): 74, pid='<unknown>', name=<unknown>, NVLink: fatal error detected on link 3(0x10000, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0)", &one{"XID74", 74, "0000:2a:00.0", fatal, reboot}},
		{"92 sim form", "NVRM: Xid (PCI:0000:2a:00): 92, pid='<unknown>', name=<unknown>, High single-bit ECC error rate", &one{"XID92", 92, "0000:2a:00.0", warning, none}},
		{"syslog prefix kept out of the way", "kernel: NVRM: Xid (PCI:0000:05:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.", &one{"XID79", 79, "0000:05:00.0", fatal, reboot}},
		{"bad bus still reported", "NVRM: Xid (PCI:zz:qq): 79, pid=1, GPU has fallen off the bus.", &one{"XID79", 79, "", fatal, reboot}},
		{"unterminated parenthesis", "NVRM: Xid (PCI:0000:05:00: 79, pid=1", nil},
		{"no code", "NVRM: Xid (PCI:0000:05:00): pid=1, name=x", nil},
		{"overlong code", "NVRM: Xid (PCI:0000:05:00): 123456789012345678901234, x", nil},
		// Other driver lines.
		{"rate limit", "NVRM: Rate limiting GSP RPC error prints for GPU at PCI:0000:9b:00 (printing 1 of every 30).  The GPU likely needs to be reset.", nil},
		{"GPU UUID notice", "NVRM: GPU at PCI:0000:9b:00: GPU-509665ad-b600-ac93-3616-d754b23d636d", nil},
		{"RPC history", "NVRM:      0    103  GSP_RM_ALLOC          0x0000000000002081 0x0000000000000004 0x00062ed1a6bd61fa 0x0000000000000000          y", nil},
		{"fell off in one line", "NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.", &one{"GPU_FELL_OFF_BUS", 0, "0000:3b:00.0", fatal, reboot}},
		{"API mismatch first line", "NVRM: API mismatch: the client has the version 575.57.08, but", &one{"DRIVER_MISMATCH", 0, "", fatal, reboot}},
		{"RmInitAdapter with GPU", "NVRM: GPU 0000:01:00.0: RmInitAdapter failed! (0x26:0x56:1474)", &one{"DRIVER_LOAD_FAILED", 0, "0000:01:00.0", fatal, reboot}},
		{"RmInitAdapter old", "NVRM: RmInitAdapter failed! (0x25:0x65:1203)", &one{"DRIVER_LOAD_FAILED", 0, "", fatal, reboot}},
		{"rm_init_adapter", "NVRM: GPU 0000:01:00.0: rm_init_adapter failed, device minor number 0", &one{"DRIVER_LOAD_FAILED", 0, "0000:01:00.0", fatal, reboot}},
		{"generic failed to initialize", "NVRM: GPU 0000:3b:00.0: GSP firmware failed to initialize", &one{"DRIVER_LOAD_FAILED", 0, "0000:3b:00.0", fatal, reboot}},
		{"probe routine", "NVRM: The NVIDIA probe routine failed for 1 device(s).", &one{"DRIVER_LOAD_FAILED", 0, "", fatal, reboot}},
		{"no device initialized", "NVRM: None of the NVIDIA devices were initialized.", &one{"DRIVER_LOAD_FAILED", 0, "", fatal, reboot}},
		{"probe of, old kernels", "nvidia: probe of 0000:01:00.0 failed with error -1", &one{"DRIVER_LOAD_FAILED", 0, "0000:01:00.0", fatal, reboot}},
		{"probe with driver, new kernels", "nvidia 0000:01:00.0: probe with driver nvidia failed with error -1", &one{"DRIVER_LOAD_FAILED", 0, "0000:01:00.0", fatal, reboot}},
		{"other driver's probe", "ahci 0000:00:17.0: probe with driver ahci failed with error -12", nil},
		// NVSwitch.
		{"SXid fatal", "nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 20034, Fatal, Link 30 LTSSM Fault Up", &one{"SXID", 0, "", fatal, reboot}},
		{"SXid non-fatal", "nvidia-nvswitch3: SXid (PCI:0000:c1:00.0): 12028, Non-fatal, Link 32 egress non-posted PRIV error (First)", &one{"SXID", 0, "", warning, none}},
		{"SXid severity follow-up", "nvidia-nvswitch3: SXid (PCI:0000:c1:00.0): 12028, Severity 0 Engine instance 32 Sub-engine instance 00", nil},
		{"SXid data follow-up", "nvidia-nvswitch3: SXid (PCI:0000:c1:00.0): 12028, Data {0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000}", nil},
		{"nvswitch open", "nvidia-nvswitch2: open (major=510)", nil},
		// PCIe.
		{"AER root port notice", "pcieport 0000:17:01.0: AER: Corrected error received: 0000:18:00.0", nil},
		{"AER corrected", "nvidia 0000:18:00.0: PCIe Bus Error: severity=Corrected, type=Physical Layer, (Receiver ID)", &one{"PCIE_AER", 0, "0000:18:00.0", warning, none}},
		{"AER status detail", "nvidia 0000:18:00.0:   device [10de:2330] error status/mask=00000001/00002000", nil},
		{"AER bit detail", "nvidia 0000:18:00.0:    [ 0] RxErr                  (First)", nil},
		{"AER uncorrected non-fatal", "nvidia 0000:18:00.0: PCIe Bus Error: severity=Uncorrected (Non-Fatal), type=Transaction Layer, (Requester ID)", &one{"PCIE_AER", 0, "0000:18:00.0", warning, none}},
		{"AER uncorrected fatal", "nvidia 0000:18:00.0: PCIe Bus Error: severity=Uncorrected (Fatal), type=Transaction Layer, (Requester ID)", &one{"PCIE_AER", 0, "0000:18:00.0", fatal, reboot}},
		{"AER newer kernels", "nvidia 0000:18:00.0: AER: PCIe Bus Error: severity=Uncorrected (Fatal), type=Transaction Layer, (Requester ID)", &one{"PCIE_AER", 0, "0000:18:00.0", fatal, reboot}},
		{"AER on a NIC", "mlx5_core 0000:0c:00.0: PCIe Bus Error: severity=Corrected, type=Physical Layer, (Receiver ID)", nil},
		{"link downtrained", "pci 0000:18:00.0: 63.008 Gb/s available PCIe bandwidth, limited by 8.0 GT/s PCIe x8 link at 0000:17:01.0 (capable of 504.112 Gb/s with 32.0 GT/s PCIe x16 link)", &one{"PCIE_LINK_DEGRADED", 0, "0000:18:00.0", warning, none}},
		{"PCIe noise", "pci 0000:00:01.0: PCIe port services enabled", nil},
		// Node problems.
		{"soft lockup", "watchdog: BUG: soft lockup - CPU#12 stuck for 23s! [python:1234]", &one{"SOFT_LOCKUP", 0, "", warning, none}},
		{"soft lockup old", "BUG: soft lockup - CPU#0 stuck for 22s! [swapper/0:0]", &one{"SOFT_LOCKUP", 0, "", warning, none}},
		{"hung task", "INFO: task python:1234 blocked for more than 120 seconds.", &one{"HUNG_TASK", 0, "", warning, none}},
		{"hung task kworker", "INFO: task kworker/u16:2:123 blocked for more than 122 seconds.", &one{"HUNG_TASK", 0, "", warning, none}},
		{"hung task follow-up", `"echo 0 > /proc/sys/kernel/hung_task_timeout_secs" disables this message.`, nil},
		{"conntrack", "nf_conntrack: nf_conntrack: table full, dropping packet", &one{"CONNTRACK_FULL", 0, "", warning, none}},
		{"conntrack short", "nf_conntrack: table full, dropping packet", &one{"CONNTRACK_FULL", 0, "", warning, none}},
		{"other table full", "neighbour: arp_cache: neighbor table overflow!", nil},
		{"NULL dereference", "BUG: kernel NULL pointer dereference, address: 0000000000000008", &one{"KERNEL_BUG", 0, "", warning, none}},
		{"kernel BUG at", "kernel BUG at mm/slub.c:4317!", &one{"KERNEL_BUG", 0, "", warning, none}},
		{"page fault BUG", "BUG: unable to handle page fault for address: ffffa0c3c0000000", &one{"KERNEL_BUG", 0, "", warning, none}},
		{"DEBUG is not a BUG", "usb 1-1: DEBUG mode enabled", nil},
		{"OOM killed", "Out of memory: Killed process 1234 (python) total-vm:1234kB, anon-rss:1000kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:100kB oom_score_adj:0", &one{"OOM_KILL", 0, "", warning, none}},
		{"OOM memcg", "Memory cgroup out of memory: Killed process 863987 (node) total-vm:1000kB, anon-rss:900kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:10kB oom_score_adj:999", &one{"OOM_KILL", 0, "", warning, none}},
		{"OOM old kernels", "Out of memory: Kill process 456 (python) score 50 or sacrifice child", &one{"OOM_KILL", 0, "", warning, none}},
		{"oom-kill summary", "oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=x.scope,mems_allowed=0-1,oom_memcg=/kubepods,task_memcg=/kubepods/x,task=node,pid=863987,uid=0", &one{"OOM_KILL", 0, "", warning, none}},
		{"oom-killer invoked", "python invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=0", nil},
		{"oom reaper", "oom_reaper: reaped process 345646 (vector), now anon-rss:0kB, file-rss:0kB, shmem-rss:0", nil},
		// Noise.
		{"noise ipv6", "IPv6: ADDRCONF(NETDEV_CHANGE): eth0: link becomes ready", nil},
		{"noise perf", "perf: interrupt took too long (2509 > 2500), lowering kernel.perf_event_max_sample_rate to 79500", nil},
		{"empty", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := newDetector(t).Detect(tt.line, t0)
			var want []finding.Finding
			if w := tt.want; w != nil {
				want = []finding.Finding{fnd(w.code, w.xid, w.gpu, w.sev, w.act, tt.line)}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Detect(%q) (-want +got):\n%s", tt.line, diff)
			}
		})
	}
}

func TestIndentedContinuationIsTrimmed(t *testing.T) {
	line := "               NVRM: Xid (PCI:0000:05:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."
	want := []finding.Finding{fnd("XID79", 79, "0000:05:00.0", fatal, reboot,
		"NVRM: Xid (PCI:0000:05:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.")}
	if diff := cmp.Diff(want, newDetector(t).Detect(line, t0)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
