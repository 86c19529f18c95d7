package detect

import (
	"strings"
	"time"

	"github.com/gpuheal/gpuheal/internal/finding"
	"github.com/gpuheal/gpuheal/internal/termsafe"
)

// The prefixes of the AWS EFA driver's lines. Its PCI device's own lines
// say "efa 0000:00:06.0: …"; its RDMA device's say "efa 0000:a0:1a.0
// rdmap160s26: …" on kernels with ibdev_err, and "infiniband rdmap16s27:
// …" where the out-of-tree driver's compatibility layer logs on the RDMA
// device itself (no driver bound to it, so the kernel names its class).
const (
	efaPrefix        = "efa "
	infinibandPrefix = "infiniband "
)

// isEFALine reports a line that starts with either prefix. ENA, the
// Ethernet driver of the same cards, prints some of the same words
// ("Reset indication didn't turn on") under "ena ".
func isEFALine(s string) bool { return fabricDriver(s) == fabricEFA }

// splitEFA returns the device a line is about (a PCI address as printed,
// or the RDMA device's name when the line has no address), whether it is
// an address, and the message.
func splitEFA(s string) (dev string, isBus bool, msg string, ok bool) {
	own, _ := driverLine(s, "")
	if rest, found := strings.CutPrefix(own, infinibandPrefix); found {
		// The class prefix is every RDMA driver's: only EFA's device
		// names, efa_N from the kernel or rdmapBsD from udev, count.
		name, msg, found := strings.Cut(rest, ": ")
		if !found || !(strings.HasPrefix(name, "efa") || strings.HasPrefix(name, "rdmap")) || strings.ContainsAny(name, " \t") {
			return "", false, "", false
		}
		return name, false, strings.TrimSpace(msg), true
	}
	rest, found := strings.CutPrefix(own, efaPrefix)
	if !found {
		return "", false, "", false
	}
	tok, after, found := strings.Cut(rest, " ")
	if !found {
		return "", false, "", false
	}
	bus, isDev := strings.CutSuffix(tok, ":")
	if !isDev {
		// "efa 0000:a0:1a.0 rdmap160s26: msg": the RDMA device's line.
		var name string
		if name, after, found = strings.Cut(after, ": "); !found || name == "" || strings.ContainsAny(name, " \t") {
			return "", false, "", false
		}
	}
	if !isBusID(bus) {
		return "", false, "", false
	}
	return bus, true, strings.TrimSpace(after), true
}

// efa reports an EFA line; like the rest of the fabric, node-level with
// the device in Device.
func (d *Detector) efa(dst []finding.Finding, s string, t time.Time) []finding.Finding {
	dev, isBus, msg, ok := splitEFA(s)
	if !ok {
		return dst
	}
	code, sev, act := classifyEFA(msg)
	if code == "" {
		return dst
	}
	if isBus {
		dev = d.deviceBus(dev)
	} else {
		dev = termsafe.Clean(strings.Clone(dev))
	}
	return d.emitDevice(dst, code, dev, sev, act, t, s)
}

// classifyEFA gives an EFA message's code, severity and action, from the
// driver's own format strings (amzn-drivers kernel/linux/efa/src/efa_com.c
// and efa_main.c).
func classifyEFA(msg string) (string, finding.Severity, finding.Action) {
	switch {
	case strings.HasPrefix(msg, "The device didn't send any completion for admin cmd"),
		strings.HasPrefix(msg, "The device sent a completion but the driver didn't receive any MSI-X interrupt"),
		msg == "Wait for completion (polling) timeout",
		msg == "Admin queue is closed":
		// After one admin command times out the driver closes its admin
		// queue: no queue pair or memory region can be made until the
		// driver is reloaded with the device reset.
		return CodeEFAAdminQueue, finding.Fatal, finding.ActionReboot
	case strings.HasPrefix(msg, "Reading register timed out"),
		strings.HasPrefix(msg, "Device isn't ready"),
		strings.HasPrefix(msg, "Reset indication didn't turn"),
		msg == "EFA device init failed":
		// The device does not answer register reads or resets: it is
		// not usable, and came up unusable if this was at load.
		return CodeEFADeviceFailed, finding.Fatal, finding.ActionReboot
	case strings.HasPrefix(msg, "Failed to process command "),
		strings.HasPrefix(msg, "Failed to submit command "):
		// One command refused; a process tearing down its memory
		// registrations races the runtime's own cleanup and prints
		// this harmlessly (DEREG_MR, comp_status 7).
		return CodeEFACmdFailed, finding.Warning, finding.ActionNone
	case strings.HasPrefix(msg, "Unknown event was received"):
		// The driver handles only keep-alives among the asynchronous
		// events it enables: a fatal-error, warning or notification
		// event from the device arrives as this line.
		return CodeEFAAsyncEvent, finding.Warning, finding.ActionNone
	}
	return "", "", ""
}
