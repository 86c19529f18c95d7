package detect

import (
	"strings"
	"time"

	"github.com/gpuheal/gpuheal/internal/finding"
)

// sxid reports an NVSwitch error: "nvidia-nvswitch0: SXid (PCI:0000:05:00.0):
// 20034, Fatal, Link 30 LTSSM Fault Up". Only the first line of an error
// says Fatal or Non-fatal; its follow-ups (", Severity 0 …", ", Data {…}")
// are details of the same error, not findings.
func (d *Detector) sxid(dst []finding.Finding, s string, t time.Time) []finding.Finding {
	// After the NVSwitch driver's own prefix comes "<N>: SXid (" at once:
	// an SXid anywhere else in its line is someone else's text.
	own, _ := driverLine(s, nvswitchPrefix)
	dev, after, ok := strings.Cut(own[len(nvswitchPrefix):], ": SXid (")
	if !ok || dev == "" || strings.TrimLeft(dev, "0123456789") != "" {
		return dst
	}
	end := strings.IndexByte(after, ')')
	if end < 0 {
		return dst
	}
	rest := strings.TrimLeft(after[end+1:], ": ")
	_, n := leadingUint(rest)
	if n == 0 {
		return dst
	}
	detail := strings.TrimLeft(rest[n:], ", ")
	switch {
	case strings.HasPrefix(detail, "Fatal"):
		// A fatal NVSwitch error takes the fabric down for every GPU; the
		// switches and GPUs reset together, which a reboot does.
		return d.emit(dst, CodeSXid, "", finding.Fatal, finding.ActionReboot, t, s)
	case strings.HasPrefix(detail, "Non-fatal"), strings.HasPrefix(detail, "Nonfatal"), strings.HasPrefix(detail, "Non-Fatal"):
		return d.emit(dst, CodeSXid, "", finding.Warning, finding.ActionNone, t, s)
	}
	return dst
}

// pcie handles the PCI core's reports about a device's link.
func (d *Detector) pcie(dst []finding.Finding, s string, t time.Time) []finding.Finding {
	if i := strings.Index(s, "PCIe Bus Error: severity="); i >= 0 {
		return d.aer(dst, s, i, t)
	}
	if strings.Contains(s, "available PCIe bandwidth, limited by") {
		// "pci 0000:18:00.0: 63.008 Gb/s available PCIe bandwidth, limited
		// by 8.0 GT/s PCIe x8 link at 0000:17:01.0 (capable of …)"
		_, dev, _ := strings.Cut(strings.TrimSpace(s), " ")
		bus, _, ok := strings.Cut(dev, ": ")
		if !ok {
			return dst
		}
		return d.emit(dst, CodePCIeLinkDegraded, d.normBus(bus), finding.Warning, finding.ActionNone, t, s)
	}
	return dst
}

// aer reports "nvidia 0000:18:00.0: PCIe Bus Error: severity=Corrected,
// type=Physical Layer, (Receiver ID)" (newer kernels put "AER: " before
// "PCIe"); i is where "PCIe Bus Error" starts. Only devices the nvidia
// driver owns count: the kernel names the driver before the address.
func (d *Detector) aer(dst []finding.Finding, s string, i int, t time.Time) []finding.Finding {
	driver, dev, _ := strings.Cut(strings.TrimSpace(s[:i]), " ")
	if driver != "nvidia" {
		return dst
	}
	bus, _, _ := strings.Cut(dev, " ")
	bus = strings.TrimSuffix(bus, ":")
	sev, _, _ := strings.Cut(s[i+len("PCIe Bus Error: severity="):], ",")
	if strings.Contains(sev, "Fatal") && !strings.Contains(sev, "Non-Fatal") {
		// Uncorrected (Fatal): the link is unusable until a secondary bus
		// reset, in practice a reboot.
		return d.emit(dst, CodePCIeAER, d.normBus(bus), finding.Fatal, finding.ActionReboot, t, s)
	}
	// Corrected: the link recovered. Uncorrected (Non-Fatal): one
	// transaction was lost. If that hurt the GPU, the driver adds an Xid.
	return d.emit(dst, CodePCIeAER, d.normBus(bus), finding.Warning, finding.ActionNone, t, s)
}

// bug reports "BUG: …" lines. "BUG" alone also matches "DEBUG" and names,
// so the line must look like the kernel's own report.
func (d *Detector) bug(dst []finding.Finding, s string, t time.Time) []finding.Finding {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "BUG:") && !strings.Contains(s, ": BUG:") && !strings.Contains(s, "kernel BUG at ") {
		return dst
	}
	if strings.Contains(s, "soft lockup") {
		return d.emit(dst, CodeSoftLockup, "", finding.Warning, finding.ActionNone, t, s)
	}
	return d.emit(dst, CodeKernelBug, "", finding.Warning, finding.ActionNone, t, s)
}

// oomFoldLines and oomFoldTime bound how far apart the two lines of one
// OOM kill (the "oom-kill:" summary and "Killed process") may be.
const (
	oomFoldLines = 8
	oomFoldTime  = 5 * time.Second
)

// oomState is the last OOM kill reported, to fold its second line into it.
type oomState struct {
	pid uint64 // 0: none or unknown
	seq uint64
	t   time.Time
}

// oomKill reports an OOM kill. Forms: "Out of memory: Killed process 1234
// (python) …", "Memory cgroup out of memory: Killed process …", old
// kernels' "Out of memory: Kill process 456 (python) score 50 or sacrifice
// child" and bare "Killed process 456 …", and "oom-kill:constraint=…,
// task=node,pid=863987,uid=0". "… invoked oom-killer:" is the start of
// the report, not the kill.
func (d *Detector) oomKill(dst []finding.Finding, s string, t time.Time) []finding.Finding {
	var pid uint64
	switch {
	case strings.Contains(s, "oom-kill:"):
		if _, p, ok := strings.Cut(s, ",pid="); ok {
			pid, _ = leadingUint(p)
		}
	case strings.Contains(s, "Killed process "):
		_, p, _ := strings.Cut(s, "Killed process ")
		pid, _ = leadingUint(p)
	case strings.Contains(s, "Kill process "):
		_, p, _ := strings.Cut(s, "Kill process ")
		pid, _ = leadingUint(p)
	default:
		return dst
	}
	prev := d.oom
	d.oom = oomState{pid: pid, seq: d.seq, t: t}
	if pid != 0 && pid == prev.pid && d.seq-prev.seq <= oomFoldLines && near(t, prev.t, oomFoldTime) {
		return dst
	}
	return d.emit(dst, CodeOOMKill, "", finding.Warning, finding.ActionNone, t, s)
}

// near reports whether a and b are within d of each other; unknown (zero)
// times do not keep lines apart.
func near(a, b time.Time, d time.Duration) bool {
	if a.IsZero() || b.IsZero() {
		return true
	}
	diff := a.Sub(b)
	return -d <= diff && diff <= d
}
