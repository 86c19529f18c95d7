package detect

import (
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
			}
		}
	})
}
