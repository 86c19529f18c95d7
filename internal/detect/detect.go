package detect

import (
	"strings"
	"time"

	"github.com/gpuheal/gpuheal/internal/finding"
	"github.com/gpuheal/gpuheal/internal/gpu"
	"github.com/gpuheal/gpuheal/internal/termsafe"
	"github.com/gpuheal/gpuheal/internal/xid"
)

// Codes of the findings this package makes, besides XID<n>.
const (
	CodeFellOffBus       = "GPU_FELL_OFF_BUS"
	CodeSXid             = "SXID"
	CodePCIeAER          = "PCIE_AER"
	CodePCIeLinkDegraded = "PCIE_LINK_DEGRADED"
	CodeDriverMismatch   = "DRIVER_MISMATCH"
	CodeDriverLoadFailed = "DRIVER_LOAD_FAILED"
	CodeSoftLockup       = "SOFT_LOCKUP"
	CodeHungTask         = "HUNG_TASK"
	CodeConntrackFull    = "CONNTRACK_FULL"
	CodeKernelBug        = "KERNEL_BUG"
	CodeOOMKill          = "OOM_KILL"
)

// Codes of the network fabric's findings: the ConnectX driver (mlx5_core)
// and the EFA driver in the kernel log. They are node-level (GPU empty)
// and name the adapter in Device.
const (
	CodeMlx5CableUnplugged = "MLX5_CABLE_UNPLUGGED"
	CodeMlx5ModuleDisabled = "MLX5_MODULE_DISABLED"
	CodeMlx5ModuleError    = "MLX5_MODULE_ERROR"
	CodeMlx5HighTemp       = "MLX5_HIGH_TEMPERATURE"
	CodeMlx5LinkDown       = "MLX5_LINK_DOWN"
	CodeMlx5FWFatal        = "MLX5_FW_FATAL"
	CodeMlx5FWHealth       = "MLX5_FW_HEALTH"
	CodeMlx5CmdTimeout     = "MLX5_CMD_TIMEOUT"
	CodeMlx5PCIError       = "MLX5_PCI_ERROR"
	CodeMlx5PCIePower      = "MLX5_PCIE_POWER"
	CodeEFAAdminQueue      = "EFA_ADMIN_QUEUE_FAILED"
	CodeEFADeviceFailed    = "EFA_DEVICE_FAILED"
	CodeEFACmdFailed       = "EFA_CMD_FAILED"
	CodeEFAAsyncEvent      = "EFA_ASYNC_EVENT"
)

// Options configures a Detector; the zero value is usable.
type Options struct {
	// Source fills Finding.Source; default "kmsg".
	Source string
	// Now stands in for a message's time when counting repeats of a
	// message that has none (zero t); default time.Now.
	Now func() time.Time
	// Counter counts Xid repeats for thresholds. Share one with other
	// Xid sources (NVML events) so both count together; default a new
	// xid.NewCounter(0, xid.DefaultCoalesce).
	Counter *xid.Counter
}

// Detector is stateful (multi-line messages, OOM folding, the Xid
// counter) and meant for one stream; it is not safe for concurrent use.
type Detector struct {
	cat     xid.Catalog
	src     string
	now     func() time.Time
	counter *xid.Counter

	seq    uint64            // lines seen, for "within the next few lines"
	buses  map[string]string // raw bus id → normalized ("" if invalid)
	fob    fellOffState
	oom    oomState
	mlx5st mlx5State
}

// maxBusCache bounds the bus-id cache; a node has a few dozen devices,
// and garbage from a corrupt log must not grow it without end.
const maxBusCache = 128

// New makes a Detector that classifies Xids with cat.
func New(cat xid.Catalog, opts Options) *Detector {
	d := &Detector{cat: cat, src: opts.Source, now: opts.Now, counter: opts.Counter, buses: make(map[string]string)}
	if d.src == "" {
		d.src = "kmsg"
	}
	if d.now == nil {
		d.now = time.Now
	}
	if d.counter == nil {
		d.counter = xid.NewCounter(0, xid.DefaultCoalesce)
	}
	return d
}

// Detect returns the findings in one kernel-log message (nil for noise).
// t is the kernel's time for the message, zero when unknown.
func (d *Detector) Detect(msg string, t time.Time) []finding.Finding {
	return d.Append(nil, msg, t)
}

// Append is Detect appending to dst, so a caller that reuses dst
// allocates nothing for noise and little for findings.
func (d *Detector) Append(dst []finding.Finding, msg string, t time.Time) []finding.Finding {
	if strings.IndexByte(msg, '\n') < 0 {
		return d.line(dst, msg, "", t)
	}
	for rest := msg; ; {
		line, more, found := strings.Cut(rest, "\n")
		dst = d.line(dst, line, more, t)
		if !found {
			return dst
		}
		rest = more
	}
}

// line handles one line; rest is what follows it in the same record ("" when
// records arrive line by line). The switch is the prefilter: each case is
// a substring every line of its kind contains, and noise misses them all.
func (d *Detector) line(dst []finding.Finding, s, rest string, t time.Time) []finding.Finding {
	d.seq++
	fab := fabricDriver(s)
	switch {
	// A driver's words count only under the driver's own prefix at the
	// start of the line; elsewhere they are someone else's text, and the
	// line goes on to the other cases (an OOM kill of a process named
	// "NVRM: Xid" is still an OOM kill).
	case strings.Contains(s, "NVRM") && isDriverLine(s, nvrmPrefix):
		return d.nvrm(dst, s, rest, t)
	case strings.Contains(s, "SXid") && isDriverLine(s, nvswitchPrefix):
		return d.sxid(dst, s, t)
	// The fabric's drivers print under their own prefix at the start of
	// the line, which is a cheaper test than a search of the whole line.
	case fab == fabricMlx5:
		return d.mlx5(dst, s, t)
	case fab == fabricEFA:
		return d.efa(dst, s, t)
	case strings.Contains(s, "PCIe"):
		return d.pcie(dst, s, t)
	case strings.Contains(s, "failed with error"):
		return d.probeFailed(dst, s, t)
	case strings.Contains(s, "fallen off the bus") && (d.fellOffLive() || strings.HasPrefix(strings.TrimSpace(s), "fallen off the bus")):
		// The driver's message, split into lines that lost their "NVRM: ".
		return d.fellOff(dst, strings.TrimSpace(s), t)
	case strings.Contains(s, "BUG"):
		return d.bug(dst, s, t)
	case strings.Contains(s, "blocked for more than"):
		return d.emit(dst, CodeHungTask, "", finding.Warning, finding.ActionNone, t, s)
	case strings.Contains(s, "table full"):
		if strings.Contains(s, "conntrack") {
			return d.emit(dst, CodeConntrackFull, "", finding.Warning, finding.ActionNone, t, s)
		}
	case strings.Contains(s, "Kill"), strings.Contains(s, "oom-kill:"):
		return d.oomKill(dst, s, t)
	case d.fob.active && strings.Contains(s, "(PCI ID:"):
		// A continuation line that lost its "NVRM: " on the way.
		d.continueFellOff(s)
	}
	return dst
}

func (d *Detector) emit(dst []finding.Finding, code, gpu string, sev finding.Severity, act finding.Action, t time.Time, msg string) []finding.Finding {
	return append(dst, finding.Finding{
		Source: d.src, Code: code, GPU: gpu, Severity: sev, Action: act,
		// The kernel log is outside text: it reaches Events, conditions
		// and terminals, so no escape sequence may ride along.
		Time: t, Message: termsafe.Clean(strings.TrimSpace(msg)),
	})
}

// emitDevice is emit for a device that is not a GPU (the fabric's).
func (d *Detector) emitDevice(dst []finding.Finding, code, dev string, sev finding.Severity, act finding.Action, t time.Time, msg string) []finding.Finding {
	dst = d.emit(dst, code, "", sev, act, t, msg)
	dst[len(dst)-1].Device = dev
	return dst
}

// deviceBus is a fabric device's address, normalized; an address the
// driver printed but that is no valid one (a corrupt line) stays as
// printed, so the finding still says which device.
func (d *Detector) deviceBus(bus string) string {
	if g := d.normBus(bus); g != "" {
		return g
	}
	return termsafe.Clean(strings.Clone(bus))
}

// normBus normalizes a bus id as the kernel printed it, caching results:
// the same few GPUs repeat, and NormalizePCIBusID allocates.
func (d *Detector) normBus(bus string) string {
	if g, ok := d.buses[bus]; ok {
		return g
	}
	g, err := gpu.NormalizePCIBusID(bus)
	if err != nil {
		g = ""
	}
	if len(d.buses) >= maxBusCache {
		clear(d.buses)
	}
	d.buses[strings.Clone(bus)] = g
	return g
}

// findBusID finds the first "dddd:bb:dd" (with an optional ".f") in s, for
// lines that name a device somewhere in free text.
func findBusID(s string) (string, bool) {
	for i := 0; i+10 <= len(s); i++ {
		if s[i+4] != ':' || s[i+7] != ':' || (i > 0 && isHex(s[i-1])) ||
			!allHex(s[i:i+4]) || !allHex(s[i+5:i+7]) || !allHex(s[i+8:i+10]) {
			continue
		}
		end := i + 10
		if end+2 <= len(s) && s[end] == '.' && isHex(s[end+1]) {
			end += 2
		}
		return s[i:end], true
	}
	return "", false
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func allHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isHex(s[i]) {
			return false
		}
	}
	return true
}

// leadingUint parses the decimal number s starts with; n is how many bytes
// it took (0: none). More than 19 digits would overflow, so is not a code.
func leadingUint(s string) (v uint64, n int) {
	for n < len(s) && '0' <= s[n] && s[n] <= '9' {
		if n == 19 {
			return 0, 0
		}
		v = v*10 + uint64(s[n]-'0')
		n++
	}
	return v, n
}
