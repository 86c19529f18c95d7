package detect

import (
	"strings"
	"time"

	"github.com/gpuheal/gpuheal/internal/finding"
	"github.com/gpuheal/gpuheal/internal/gpu"
	"github.com/gpuheal/gpuheal/internal/termsafe"
)

// Codes of the findings from NVIDIA Fabric Manager's log, all node-level.
const (
	CodeFMNVSwitchFatal    = "FM_NVSWITCH_FATAL"
	CodeFMNVSwitchNonFatal = "FM_NVSWITCH_NONFATAL"
	CodeFMGPUNVLinkFatal   = "FM_GPU_NVLINK_FATAL"
	CodeFMMulticastFailed  = "FM_MULTICAST_FAILED"
	CodeFMTopologyMismatch = "FM_TOPOLOGY_MISMATCH"
	CodeFMError            = "FM_ERROR"
)

// FMOptions configures a FabricManager detector; the zero value is usable.
type FMOptions struct {
	// Source fills Finding.Source; default "fabricmanager".
	Source string
	// Location is the zone of the log's stamps, which carry none: Fabric
	// Manager writes the node's local time. Default time.Local.
	Location *time.Location
}

// FabricManager turns lines of Fabric Manager's log
// (/var/log/fabricmanager.log) into findings. It is fed the file's lines
// one at a time, as the kernel log's file follower returns them (a line
// it does not know comes whole as the record's message), and keeps no
// state: each line carries its own time.
type FabricManager struct {
	src string
	loc *time.Location
}

// NewFabricManager makes a Fabric Manager log detector.
func NewFabricManager(opts FMOptions) *FabricManager {
	m := &FabricManager{src: opts.Source, loc: opts.Location}
	if m.src == "" {
		m.src = "fabricmanager"
	}
	if m.loc == nil {
		m.loc = time.Local
	}
	return m
}

// Detect returns the findings in one log line (nil for the rest).
func (m *FabricManager) Detect(line string) []finding.Finding {
	return m.Append(nil, line)
}

// Append is Detect appending to dst.
func (m *FabricManager) Append(dst []finding.Finding, line string) []finding.Finding {
	// Cheap test first: most lines are [INFO], and every line of another
	// level than ERROR and FATAL is no finding.
	if !strings.Contains(line, "] [ERROR] ") && !strings.Contains(line, "] [FATAL] ") {
		return dst
	}
	l, ok := parseFMLine(line, m.loc)
	if !ok || l.level != "ERROR" && l.level != "FATAL" {
		return dst
	}
	code, sev, act := classifyFM(l.msg)
	if code == "" {
		return dst
	}
	return append(dst, finding.Finding{
		Source: m.src, Code: code, Device: fmSwitch(l.msg), Severity: sev, Action: act,
		Time: l.t, Message: termsafe.Clean(strings.TrimSpace(line)),
	})
}

// fmLine is one record of the log: "[Feb 27 2025 15:10:02] [ERROR] [tid
// 12727] detected NVSwitch non-fatal error 12028 on fid 0 on …".
type fmLine struct {
	t     time.Time
	level string
	tid   uint64
	msg   string
}

// fmStamp is the layout of the log's stamps; "_2" also reads a day with
// a leading zero.
const fmStamp = "Jan _2 2006 15:04:05"

// parseFMLine parses a line by hand. Lines without the stamp (the
// "Message payload details: …" and "moduleId : 3" lines that continue a
// record) are not records: false.
func parseFMLine(s string, loc *time.Location) (fmLine, bool) {
	s = strings.TrimRight(s, "\r\n")
	stamp, rest, ok := cutBracket(s)
	if !ok {
		return fmLine{}, false
	}
	t, err := time.ParseInLocation(fmStamp, stamp, loc)
	if err != nil {
		return fmLine{}, false
	}
	level, rest, ok := cutBracket(strings.TrimLeft(rest, " "))
	if !ok || level == "" || strings.ContainsAny(level, " \t") {
		return fmLine{}, false
	}
	l := fmLine{t: t, level: level}
	rest = strings.TrimLeft(rest, " ")
	if tid, after, ok := cutBracket(rest); ok && strings.HasPrefix(tid, "tid ") {
		v, n := leadingUint(tid[len("tid "):])
		if n == 0 || n != len(tid)-len("tid ") {
			return fmLine{}, false
		}
		l.tid, rest = v, after
	}
	l.msg = strings.TrimSpace(rest)
	return l, true
}

// cutBracket cuts "[x] rest" into "x" and " rest".
func cutBracket(s string) (inside, rest string, ok bool) {
	if !strings.HasPrefix(s, "[") {
		return "", "", false
	}
	end := strings.IndexByte(s, ']')
	if end < 0 {
		return "", "", false
	}
	return s[1:end], s[end+1:], true
}

// classifyFM gives a Fabric Manager error's code, severity and action.
func classifyFM(msg string) (string, finding.Severity, finding.Action) {
	switch {
	case strings.HasPrefix(msg, "detected NVSwitch fatal error "):
		// The switch side of an SXid: the switch and the GPUs on it reset
		// together, which a reboot does (as for the kernel's SXid).
		return CodeFMNVSwitchFatal, finding.Fatal, finding.ActionReboot
	case strings.HasPrefix(msg, "detected NVSwitch non-fatal error "):
		return CodeFMNVSwitchNonFatal, finding.Warning, finding.ActionNone
	case strings.Contains(msg, "detected GPU NVL Fatal error"):
		// A GPU's NVLink port went down with a fatal error; the log names
		// the GPU by its fabric GUID, not its PCI address.
		return CodeFMGPUNVLinkFatal, finding.Fatal, finding.ActionReboot
	case strings.HasPrefix(msg, "failed to find the GPU handle ") && strings.Contains(msg, "multicast team"):
		// Fabric Manager no longer knows a GPU that asks for NVLink
		// multicast: NVLS jobs fail on the node until Fabric Manager and
		// the GPUs start over together.
		return CodeFMMulticastFailed, finding.Fatal, finding.ActionReboot
	case strings.Contains(msg, "don't match with any supported system topology"):
		// Fewer switches than the board has (one failed or is missing):
		// Fabric Manager exits and no GPU joins the fabric.
		return CodeFMTopologyMismatch, finding.Fatal, finding.ActionReboot
	case strings.Contains(msg, "NV_WARN_NOTHING_TO_DO"):
		// No NVSwitch to manage (a board without one): not a fault.
		return "", "", ""
	}
	return CodeFMError, finding.Warning, finding.ActionNone
}

// fmSwitch is the normalized address in "… on NVSwitch pci bus id
// 00000000:86:00.0 physical id 3 port 61", or "".
func fmSwitch(msg string) string {
	_, after, ok := strings.Cut(msg, "pci bus id ")
	if !ok {
		return ""
	}
	bus, _, _ := strings.Cut(after, " ")
	g, err := gpu.NormalizePCIBusID(bus)
	if err != nil {
		return ""
	}
	return g
}
