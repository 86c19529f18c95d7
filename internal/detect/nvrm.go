package detect

import (
	"strconv"
	"strings"
	"time"

	"github.com/gpuheal/gpuheal/internal/finding"
)

// fellOffLines is how many lines after "The NVIDIA GPU <bus>" the rest of
// the fallen-off-the-bus message may arrive; other CPUs' lines can
// interleave with a message that text dmesg split into lines.
const fellOffLines = 4

// fellOffState remembers the first line of the driver's multi-line
// "fallen off the bus" message until its last line arrives.
type fellOffState struct {
	active bool
	seq    uint64
	gpu    string
	text   string
}

// driverFailures are the driver's own words for "the GPU did not come
// up"; "ailed to" matches both capitalizations.
var driverFailures = []string{
	"RmInitAdapter failed",
	"rm_init_adapter failed",
	"ailed to initialize",
	"probe routine failed",
	"None of the NVIDIA devices",
}

// The prefixes the NVIDIA drivers start their own lines with: the GPU
// driver, and the NVSwitch driver ("nvidia-nvswitch<N>: ").
const (
	nvrmPrefix     = "NVRM: "
	nvswitchPrefix = "nvidia-nvswitch"
)

// driverLine returns the line from the driver's own prefix on, or false
// when the line does not start with it. Only leading blanks (an indented
// continuation) and a syslog "kernel: " tag that a reader left in may come
// first: "NVRM: Xid (…)" anywhere else in a line is someone else's text (a
// process name the kernel quotes, an application's message relayed into
// the log), and must not open an incident.
func driverLine(s, prefix string) (string, bool) {
	s = strings.TrimLeft(s, " \t")
	s = strings.TrimPrefix(s, "kernel: ")
	return s, strings.HasPrefix(s, prefix)
}

func isDriverLine(s, prefix string) bool {
	_, ok := driverLine(s, prefix)
	return ok
}

// nvrm handles lines of the NVIDIA kernel module ("NVRM: …").
func (d *Detector) nvrm(dst []finding.Finding, s, rest string, t time.Time) []finding.Finding {
	line := s
	s, _ = driverLine(s, nvrmPrefix)
	if after, ok := strings.CutPrefix(s[len(nvrmPrefix):], "Xid ("); ok {
		return d.xid(dst, line, after, t)
	}
	s = strings.TrimSpace(s)
	switch {
	case strings.Contains(s, "fallen off the bus"):
		return d.fellOff(dst, s, t)
	case strings.Contains(s, "The NVIDIA GPU "):
		d.startFellOff(s)
	case strings.Contains(s, "(PCI ID:"):
		d.continueFellOff(s)
	case strings.Contains(s, "API mismatch"):
		// The record goes on with the kernel module's version; when it
		// arrived whole, keep all of it in the message.
		msg := s
		if rest != "" {
			msg = joinRecord(s, rest)
		}
		return d.emit(dst, CodeDriverMismatch, "", finding.Fatal, finding.ActionReboot, t, msg)
	default:
		for _, f := range driverFailures {
			if strings.Contains(s, f) {
				return d.emit(dst, CodeDriverLoadFailed, d.busIn(s), finding.Fatal, finding.ActionReboot, t, s)
			}
		}
	}
	return dst
}

// xid parses an Xid line by hand. after is what follows "Xid (":
// "PCI:0000:05:00 GPU-I:05): 79, pid='<unknown>', name=…, text". Older
// drivers print "(0000:05:00)" without "PCI:"; the MIG instance, pid and
// name stay in the message.
func (d *Detector) xid(dst []finding.Finding, line, after string, t time.Time) []finding.Finding {
	end := strings.IndexByte(after, ')')
	if end < 0 {
		return dst
	}
	bus, _, _ := strings.Cut(strings.TrimPrefix(after[:end], "PCI:"), " ")
	rest := strings.TrimLeft(after[end+1:], ": ")
	code, n := leadingUint(rest)
	if n == 0 {
		return dst
	}
	detail := strings.TrimLeft(rest[n:], ", ")
	g := d.normBus(bus)
	e := d.cat.Classify(code, detail)
	sev, act := e.Severity, e.Action
	if e.Threshold.Count > 0 {
		at := t
		if at.IsZero() {
			at = d.now()
		}
		if d.counter.Observe(code, g, at, e.Threshold) {
			sev, act = e.Escalated()
		}
	}
	dst = d.emit(dst, xidCode(code), g, sev, act, t, line)
	dst[len(dst)-1].Xid = code
	return dst
}

// startFellOff keeps "NVRM: The NVIDIA GPU 0000:b3:00.0" until the line
// that says what happened to it; the same opening also starts other
// messages ("… is not supported"), which then simply expire.
func (d *Detector) startFellOff(s string) {
	i := strings.Index(s, "The NVIDIA GPU ")
	bus, _, _ := strings.Cut(s[i+len("The NVIDIA GPU "):], " ")
	d.fob = fellOffState{active: true, seq: d.seq, gpu: d.normBus(bus), text: s}
}

func (d *Detector) continueFellOff(s string) {
	if d.fellOffLive() {
		d.fob.text += " " + stripNVRM(s)
	}
}

func (d *Detector) fellOffLive() bool {
	return d.fob.active && d.seq-d.fob.seq <= fellOffLines
}

// fellOff reports a GPU that fell off the bus without an Xid. The GPU comes
// from the message's first line, or from the line itself when it names one.
func (d *Detector) fellOff(dst []finding.Finding, s string, t time.Time) []finding.Finding {
	g, msg := d.busIn(s), s
	if d.fellOffLive() {
		g, msg = d.fob.gpu, d.fob.text+" "+stripNVRM(s)
	}
	d.fob = fellOffState{}
	return d.emit(dst, CodeFellOffBus, g, finding.Fatal, finding.ActionReboot, t, msg)
}

// probeFailed reports the kernel's probe failure for the nvidia driver:
// "nvidia: probe of 0000:01:00.0 failed with error -1" (older kernels) or
// "nvidia 0000:01:00.0: probe with driver nvidia failed with error -1".
func (d *Detector) probeFailed(dst []finding.Finding, s string, t time.Time) []finding.Finding {
	if !strings.Contains(s, "nvidia: probe of ") && !strings.Contains(s, "probe with driver nvidia failed") {
		return dst
	}
	return d.emit(dst, CodeDriverLoadFailed, d.busIn(s), finding.Fatal, finding.ActionReboot, t, s)
}

// busIn is the normalized first bus id in s, or "".
func (d *Detector) busIn(s string) string {
	if bus, ok := findBusID(s); ok {
		return d.normBus(bus)
	}
	return ""
}

// stripNVRM drops the "NVRM: " every line of a driver record starts with,
// for joining a record's lines into one message.
func stripNVRM(s string) string {
	s = strings.TrimSpace(s)
	if _, after, ok := strings.Cut(s, "NVRM: "); ok {
		return after
	}
	return s
}

// joinRecord joins a multi-line record into one line.
func joinRecord(first, rest string) string {
	var b strings.Builder
	b.WriteString(strings.TrimSpace(first))
	for line := range strings.SplitSeq(rest, "\n") {
		if l := stripNVRM(line); l != "" {
			b.WriteByte(' ')
			b.WriteString(l)
		}
	}
	return b.String()
}

// xidCodes holds "XID0"…"XID255" so the common codes cost no allocation.
var xidCodes = func() (t [256]string) {
	for i := range t {
		t[i] = "XID" + strconv.Itoa(i)
	}
	return t
}()

// XidCode is a finding's Code for Xid code ("XID79"), the same for an
// Xid from any source.
func XidCode(code uint64) string { return xidCode(code) }

func xidCode(code uint64) string {
	if code < uint64(len(xidCodes)) {
		return xidCodes[code]
	}
	return "XID" + strconv.FormatUint(code, 10)
}
