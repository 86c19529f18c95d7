package xid

import (
	"strconv"
	"strings"

	"github.com/gpuheal/gpuheal/internal/finding"
)

// Classify is Lookup with the line's own text taken into account, for
// the codes whose meaning the line carries. detail is the text after the
// code ("NETIR_LINK_EVT  Fatal   XC0 …", "GPU recovery action changed
// from 0x0 (None) to 0x4 (Drain and Reset)", "…RST: Yes, D-RST: No").
//
//   - 144–150: Fatal → fatal/reset-gpu; Nonfatal → info/none; neither →
//     the catalog's values.
//   - 154: the new recovery action decides (see RecoveryActionVerdict).
//   - 94/95: "RST: Yes" or "D-RST: Yes" means the driver says the GPU
//     needs a reset, which raises the entry to at least fatal/reset-gpu;
//     the flags can only raise, never lower.
//
// A code whose severity or action a user override set is returned as is:
// the user's word wins over the line's.
func (c Catalog) Classify(code uint64, detail string) Entry {
	e := c.Lookup(code)
	if c.pinned[code] {
		return e
	}
	switch {
	case code >= 144 && code <= 150:
		if fatal, ok := NVLinkFatal(detail); ok {
			if fatal {
				e.Severity, e.Action = finding.Fatal, finding.ActionResetGPU
			} else {
				e.Severity, e.Action = finding.Info, finding.ActionNone
			}
		}
	case code == 154:
		if v, ok := RecoveryAction(detail); ok {
			e.Severity, e.Action = RecoveryActionVerdict(v)
		}
	case code == 94 || code == 95:
		if rst, drst, ok := ResetFlags(detail); ok && (rst || drst) {
			e.Severity = maxSeverity(e.Severity, finding.Fatal)
			e.Action = maxAction(e.Action, finding.ActionResetGPU)
		}
	}
	return e
}

// NVLinkFatal reads the Fatal/Nonfatal word of an NVLink5 (144–150) line;
// ok is false when the line has neither. Matching is case-sensitive so a
// unit mnemonic in capitals (…_FATAL_…) is not taken for the word.
func NVLinkFatal(detail string) (fatal, ok bool) {
	switch {
	case strings.Contains(detail, "Nonfatal"), strings.Contains(detail, "Non-fatal"):
		return false, true
	case strings.Contains(detail, "Fatal"):
		return true, true
	}
	return false, false
}

// RecoveryAction reads the new action from Xid 154's "GPU recovery action
// changed from 0x0 (None) to 0x4 (Drain and Reset)": the number after
// ") to " (or, for a line without the old action's name, after " to ").
func RecoveryAction(detail string) (uint64, bool) {
	i, n := strings.Index(detail, ") to "), len(") to ")
	if i < 0 {
		i, n = strings.LastIndex(detail, " to "), len(" to ")
	}
	if i < 0 {
		return 0, false
	}
	num, _, _ := strings.Cut(detail[i+n:], " ")
	v, err := strconv.ParseUint(num, 0, 64)
	return v, err == nil
}

// RecoveryActionVerdict maps the driver's recovery action (NVML field 230,
// Xid 154) to gpuheal's: 0 none → info/none, 1 GPU reset → fatal/reset-gpu,
// 2 node reboot → fatal/reboot, 3 drain P2P → warning/restart-app (stop
// the peer-to-peer jobs, the GPU itself is fine), 4 drain and reset →
// fatal/reset-gpu. Values the driver may add later → unknown/none.
func RecoveryActionVerdict(v uint64) (finding.Severity, finding.Action) {
	switch v {
	case 0:
		return finding.Info, finding.ActionNone
	case 1, 4:
		return finding.Fatal, finding.ActionResetGPU
	case 2:
		return finding.Fatal, finding.ActionReboot
	case 3:
		return finding.Warning, finding.ActionRestartApp
	}
	return finding.Unknown, finding.ActionNone
}

// ResetFlags reads "RST: Yes, D-RST: No" from an Xid 94/95 line: rst says
// the GPU needs a reset, drst that it should be drained and reset. ok is
// false when neither flag is present.
func ResetFlags(detail string) (rst, drst, ok bool) {
	for s := detail; ; {
		i := strings.Index(s, "RST: ")
		if i < 0 {
			return rst, drst, ok
		}
		yes := strings.HasPrefix(s[i+len("RST: "):], "Yes")
		if i >= 2 && s[i-2:i] == "D-" {
			drst = yes
		} else {
			rst = yes
		}
		ok = true
		s = s[i+len("RST: "):]
	}
}

func maxSeverity(a, b finding.Severity) finding.Severity {
	if b.Rank() > a.Rank() {
		return b
	}
	return a
}

func maxAction(a, b finding.Action) finding.Action {
	if b.Rank() > a.Rank() {
		return b
	}
	return a
}
