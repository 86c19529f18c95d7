package detect

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuheal/gpuheal/internal/finding"
)

// TestLookalikesOpenNothing: text that merely looks like a driver report,
// somewhere other than at the start of the line (a process name the kernel
// quotes, an application's message relayed into the log, a label), opens
// nothing; the kernel's own finding in the same line still counts.
func TestLookalikesOpenNothing(t *testing.T) {
	tests := []struct {
		name, line string
		want       []finding.Finding
	}{
		{"program relaying an Xid", "python[1234]: NVRM: Xid (PCI:0000:05:00): 79, pid=1, name=x, GPU has fallen off the bus.", nil},
		{"Xid after the prefix's place", "myapp: NVRM: Xid (PCI:0000:05:00): 48, An uncorrectable double bit error (DBE)", nil},
		{"Xid in a segfault's process name", "NVRM: Xid (PCI[4242]: segfault at 0 ip 0000 sp 0000 error 4 in a.out", nil},
		{"Xid in a file system label", "EXT4-fs (sda1): mounted filesystem with label 'NVRM: Xid (PCI:0000:05:00): 79, fallen off the bus'", nil},
		{"Xid in the middle of a driver line", "NVRM: GPU at PCI:0000:05:00: name=Xid (PCI:0000:05:00): 79, x", nil},
		{"SXid relayed", "app: nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 20034, Fatal, Link 30 LTSSM Fault Up", nil},
		{"SXid without the switch number", "nvidia-nvswitchX: SXid (PCI:0000:05:00.0): 20034, Fatal, Link 30", nil},
		{"fell off the bus in an application's words", "trainer: GPU has fallen off the bus, retrying", nil},
		{"OOM kill of a process named like an Xid", "Out of memory: Killed process 4242 (NVRM: Xid (PCI:) total-vm:100kB",
			[]finding.Finding{fnd("OOM_KILL", 0, "", warning, none, "Out of memory: Killed process 4242 (NVRM: Xid (PCI:) total-vm:100kB")}},
		// The fabric's drivers likewise: their words count only under
		// their own prefix, at the start, naming a real address.
		{"cable unplugged in an application's words", "netcheck: Cable unplugged on port 1", nil},
		{"mlx5 line relayed", "python[1234]: mlx5_core 0000:41:00.1: Port module event: module 1, Cable unplugged", nil},
		{"health compromised in an application's words", "trainer: device's health compromised - reached miss count", nil},
		{"mlx5 prefix without an address", "mlx5_core foo: Port module event: module 1, Cable unplugged", nil},
		{"mlx5 prefix with a half address", "mlx5_core 0000:41: Port module event[error]: module 0, Cable error, Bus stuck", nil},
		{"mlx5 interface name with a space", "mlx5_core 0000:41:00.0 en p0: Link down", nil},
		{"mlx5 probe failure is not the device's line", "mlx5_core: probe of 0000:03:00.0 failed with error -22", nil},
		{"other driver's link down", "ixgbe 0000:01:00.0 eno1: NIC Link is Down", nil},
		{"ENA, the same cards' Ethernet driver", "ena 0000:00:05.0: Reset indication didn't turn on", nil},
		{"ENA admin queue", "ena 0000:00:05.0 eth0: Wait for completion (polling) timeout", nil},
		{"another RDMA driver's class line", "infiniband mlx5_0: Wait for completion (polling) timeout", nil},
		{"EFA line relayed", "app: efa 0000:00:06.0 efa_0: Admin queue is closed", nil},
		{"OOM kill of a process named like the driver", "Out of memory: Killed process 4242 (mlx5_core 0000) total-vm:100kB",
			[]finding.Finding{fnd("OOM_KILL", 0, "", warning, none, "Out of memory: Killed process 4242 (mlx5_core 0000) total-vm:100kB")}},
		// The driver's own lines still count, indented or syslog-tagged.
		{"driver's own Xid", "NVRM: Xid (PCI:0000:05:00): 79, pid=1, GPU has fallen off the bus.",
			[]finding.Finding{fnd("XID79", 79, "0000:05:00.0", fatal, reboot, "NVRM: Xid (PCI:0000:05:00): 79, pid=1, GPU has fallen off the bus.")}},
		{"driver's own SXid", "nvidia-nvswitch12: SXid (PCI:0000:05:00.0): 20034, Fatal, Link 30 LTSSM Fault Up",
			[]finding.Finding{fnd("SXID", 0, "", fatal, reboot, "nvidia-nvswitch12: SXid (PCI:0000:05:00.0): 20034, Fatal, Link 30 LTSSM Fault Up")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, newDetector(t).Detect(tt.line, t0)); diff != "" {
				t.Errorf("Detect(%q) (-want +got):\n%s", tt.line, diff)
			}
		})
	}
}

// TestFindingMessagesAreTerminalSafe: a driver line carrying escape
// sequences (raw /dev/kmsg records decode \xHH, so any byte can arrive)
// still counts, but its message reaches Events, conditions and terminals
// without them.
func TestFindingMessagesAreTerminalSafe(t *testing.T) {
	line := "NVRM: Xid (PCI:0000:05:00): 79, pid=1, name=\x1b]0;owned\x07\x1b[2J\x1b[Hx\r, GPU has fallen off the bus."
	want := []finding.Finding{fnd("XID79", 79, "0000:05:00.0", fatal, reboot, "NVRM: Xid (PCI:0000:05:00): 79, pid=1, name=x, GPU has fallen off the bus.")}
	if diff := cmp.Diff(want, newDetector(t).Detect(line, t0)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
