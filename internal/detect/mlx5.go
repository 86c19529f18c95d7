package detect

import (
	"strings"
	"time"

	"github.com/gpuheal/gpuheal/internal/finding"
)

// mlx5Prefix starts every line of the NVIDIA/Mellanox ConnectX core
// driver: "mlx5_core 0000:0c:00.0: …" for the device's own lines and
// "mlx5_core 0000:41:00.0 enp65s0f0np0: …" for its network interface's.
const mlx5Prefix = "mlx5_core "

// Which fabric driver's prefix a line starts with.
const (
	fabricNone = iota
	fabricMlx5
	fabricEFA
)

// fabricDriver is the prefilter for the fabric's drivers: their lines
// start with the driver's prefix (after blanks and a syslog "kernel: "
// tag, as driverLine allows), so a look at the first bytes rules out
// nearly every other line without searching it.
func fabricDriver(s string) int {
	i := 0
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	s = s[i:]
	if len(s) > 0 && s[0] == 'k' {
		s = strings.TrimPrefix(s, "kernel: ")
	}
	if len(s) == 0 {
		return fabricNone
	}
	switch s[0] {
	case 'm':
		if strings.HasPrefix(s, mlx5Prefix) {
			return fabricMlx5
		}
	case 'e':
		if strings.HasPrefix(s, efaPrefix) {
			return fabricEFA
		}
	case 'i':
		if strings.HasPrefix(s, infinibandPrefix) {
			return fabricEFA
		}
	}
	return fabricNone
}

// mlx5FoldLines bounds how far after a fatal health line the driver's dump
// of the health buffer ("Health issue observed, …") may come and still be
// part of the same report; other CPUs' lines can come in between.
const mlx5FoldLines = 8

// mlx5State is the last fatal health report, so the buffer dump the
// driver prints after it adds no second finding.
type mlx5State struct {
	bus string
	seq uint64
}

// splitMlx5 takes an mlx5_core line apart: the device's bus id as
// printed, the interface name for a network interface's line ("" for the
// device's own) and the message without the "func:line:(pid N): " that
// mlx5_core_err and mlx5_core_warn put first.
func splitMlx5(s string) (bus, netdev, msg string, ok bool) {
	own, _ := driverLine(s, mlx5Prefix)
	rest := own[len(mlx5Prefix):]
	tok, after, found := strings.Cut(rest, " ")
	if !found {
		return "", "", "", false
	}
	if b, isDev := strings.CutSuffix(tok, ":"); isDev {
		bus, msg = b, after
	} else {
		bus = tok
		if netdev, msg, found = strings.Cut(after, ": "); !found || netdev == "" || strings.ContainsAny(netdev, " \t") {
			return "", "", "", false
		}
	}
	if !isBusID(bus) {
		return "", "", "", false
	}
	return bus, netdev, stripFuncPrefix(strings.TrimSpace(msg)), true
}

// stripFuncPrefix drops "print_health_info:372:(pid 0): " from the start
// of msg (older kernels put the device's name first as well,
// "0000:03:00.0:handle_hca_cap:438:(pid 6016): "); a message without one
// is returned as it is.
func stripFuncPrefix(msg string) string {
	i := strings.Index(msg, ":(pid ")
	if i <= 0 || strings.ContainsAny(msg[:i], " \t") {
		return msg
	}
	j := strings.LastIndexByte(msg[:i], ':')
	if j <= 0 {
		return msg
	}
	if _, n := leadingUint(msg[j+1 : i]); n == 0 || n != i-j-1 {
		return msg
	}
	_, after, found := strings.Cut(msg[i:], "): ")
	if !found {
		return msg
	}
	return after
}

// isBusID reports whether s is exactly a PCI address as the kernel prints
// it: "0000:0c:00.0" (the function optional).
func isBusID(s string) bool {
	b, ok := findBusID(s)
	return ok && len(b) == len(s)
}

// mlx5 reports a ConnectX line. The fabric is not a GPU: its findings
// leave GPU empty and carry the adapter's address in Device.
func (d *Detector) mlx5(dst []finding.Finding, s string, t time.Time) []finding.Finding {
	bus, netdev, msg, ok := splitMlx5(s)
	if !ok {
		return dst
	}
	code, sev, act := d.classifyMlx5(bus, netdev, msg)
	if code == "" {
		return dst
	}
	return d.emitDevice(dst, code, d.deviceBus(bus), sev, act, t, s)
}

// classifyMlx5 gives a ConnectX message's code, severity and action; no
// code for the driver's ordinary lines.
func (d *Detector) classifyMlx5(bus, netdev, msg string) (string, finding.Severity, finding.Action) {
	switch {
	case netdev != "":
		// The network interface's lines: only its carrier going away
		// matters here; the port's state is the fabric snapshot's to judge.
		if msg == "Link down" {
			return CodeMlx5LinkDown, finding.Warning, finding.ActionNone
		}
	case strings.HasPrefix(msg, "Port module event[error]:"):
		// "module 0, Cable error, High Temperature" is the module's own
		// temperature alarm; every other error leaves the module disabled.
		if strings.Contains(msg, "emperature") {
			return CodeMlx5HighTemp, finding.Warning, finding.ActionNone
		}
		return CodeMlx5ModuleError, finding.Fatal, finding.ActionReplace
	case strings.HasPrefix(msg, "Port module event:"):
		switch {
		case strings.HasSuffix(msg, ", Cable unplugged"):
			return CodeMlx5CableUnplugged, finding.Warning, finding.ActionNone
		case strings.HasSuffix(msg, ", Cable disabled"):
			return CodeMlx5ModuleDisabled, finding.Warning, finding.ActionNone
		}
	case strings.HasPrefix(msg, "High temperature on sensors"):
		return CodeMlx5HighTemp, finding.Warning, finding.ActionNone
	case isMlx5Fatal(msg):
		d.mlx5st = mlx5State{bus: strings.Clone(bus), seq: d.seq}
		return CodeMlx5FWFatal, finding.Fatal, finding.ActionReboot
	case strings.HasPrefix(msg, "Health issue observed, "):
		if d.mlx5st.bus == bus && d.seq-d.mlx5st.seq <= mlx5FoldLines {
			return "", "", "" // the dump of a fatal report already found
		}
		if mlx5Severity(msg) <= 2 {
			return CodeMlx5FWHealth, finding.Fatal, finding.ActionReboot
		}
		return CodeMlx5FWHealth, finding.Warning, finding.ActionNone
	case strings.HasSuffix(msg, "timeout. Will cause a leak of a command resource"):
		return CodeMlx5CmdTimeout, finding.Fatal, finding.ActionReboot
	case strings.HasPrefix(msg, "mlx5_pci_err_detected ") && strings.Contains(msg, "Exit, result = "):
		if strings.HasSuffix(msg, ", disconnect") {
			return CodeMlx5PCIError, finding.Fatal, finding.ActionReboot
		}
		return CodeMlx5PCIError, finding.Warning, finding.ActionNone
	case strings.HasPrefix(msg, "Detected insufficient power on the PCIe slot"):
		return CodeMlx5PCIePower, finding.Warning, finding.ActionNone
	}
	return "", "", ""
}

// isMlx5Fatal reports the health poller's and the recovery flow's words
// for "the firmware is gone": a missed heartbeat, a fatal sensor, a
// recovery that did not work, the driver giving up on the device.
func isMlx5Fatal(msg string) bool {
	return strings.HasPrefix(msg, "device's health compromised") ||
		strings.HasPrefix(msg, "Fatal error ") && strings.HasSuffix(msg, " detected") ||
		strings.HasPrefix(msg, "health recovery flow aborted") ||
		msg == "health recovery failed" ||
		strings.HasPrefix(msg, "Driver is in error state")
}

// mlx5Severity reads the firmware's own severity from "Health issue
// observed, firmware internal error, severity(3) ERROR:" (a kernel log
// level: 0 emergency … 3 error … 7 debug); 3 when it is unreadable.
func mlx5Severity(msg string) uint64 {
	_, after, ok := strings.Cut(msg, "severity(")
	if !ok {
		return 3
	}
	v, n := leadingUint(after)
	if n == 0 {
		return 3
	}
	return v
}
