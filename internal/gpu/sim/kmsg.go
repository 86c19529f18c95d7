package sim

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// Syslog levels the kernel uses (facility 0, so the /dev/kmsg prefix
// field is the level itself).
const (
	LevelWarning = 4
	LevelInfo    = 6
)

// Record is one kernel-log record as /dev/kmsg hands it out.
type Record struct {
	Priority int    // syslog level, e.g. LevelWarning
	Seq      uint64 // record sequence number, strictly increasing
	Usec     uint64 // microseconds since boot (the kernel's monotonic clock)
	// Message is the text of one printk. It can hold '\n': the driver
	// prints "fallen off the bus" and "API mismatch" as one multi-line
	// record, which /dev/kmsg escapes and dmesg indents.
	Message string
}

// Raw renders the record as a /dev/kmsg line without the trailing
// newline: "4,12,600000123,-;NVRM: Xid ...". Like the kernel, it escapes
// control bytes, bytes above 0x7e and backslashes as \xHH.
func (r Record) Raw() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d,%d,%d,-;", r.Priority, r.Seq, r.Usec)
	for i := 0; i < len(r.Message); i++ {
		c := r.Message[i]
		if c < ' ' || c >= 0x7f || c == '\\' {
			fmt.Fprintf(&b, `\x%02x`, c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// Dmesg renders the record as `dmesg` prints it: "[  600.000123] text",
// with the continuation lines of a multi-line record indented under the
// text, as util-linux dmesg does.
func (r Record) Dmesg() string {
	prefix := fmt.Sprintf("[%5d.%06d] ", r.Usec/1e6, r.Usec%1e6)
	indent := "\n" + strings.Repeat(" ", len(prefix))
	return prefix + strings.ReplaceAll(r.Message, "\n", indent)
}

// FormatDmesg renders records as dmesg text, one record per line.
func FormatDmesg(recs []Record) string {
	var b strings.Builder
	for _, r := range recs {
		b.WriteString(r.Dmesg())
		b.WriteByte('\n')
	}
	return b.String()
}

// FormatRaw renders records as the lines a reader of /dev/kmsg gets.
func FormatRaw(recs []Record) string {
	var b strings.Builder
	for _, r := range recs {
		b.WriteString(r.Raw())
		b.WriteByte('\n')
	}
	return b.String()
}

// line is a record before it gets its sequence number and time.
type line struct {
	prio int
	msg  string
}

func warn(msg string) line { return line{LevelWarning, msg} }
func info(msg string) line { return line{LevelInfo, msg} }

// kernelLog is a bounded ring of records plus an optional live writer.
type kernelLog struct {
	w        io.Writer
	size     int
	recs     []Record
	nextSeq  uint64
	lastUsec uint64
}

// emit appends lines stamped with sinceBoot; time never runs backwards in
// the log even if the clock does (a fake clock set back in a test).
func (l *kernelLog) emit(sinceBoot time.Duration, lines ...line) error {
	usec := uint64(max(sinceBoot.Microseconds(), 0))
	usec = max(usec, l.lastUsec)
	l.lastUsec = usec
	var werr error
	for _, ln := range lines {
		r := Record{Priority: ln.prio, Seq: l.nextSeq, Usec: usec, Message: ln.msg}
		l.nextSeq++
		l.recs = append(l.recs, r)
		if len(l.recs) >= 2*l.size {
			// Drop the oldest half in one copy rather than per record.
			l.recs = append([]Record(nil), l.recs[len(l.recs)-l.size:]...)
		}
		if l.w != nil && werr == nil {
			if _, err := io.WriteString(l.w, r.Raw()+"\n"); err != nil {
				werr = fmt.Errorf("writing kernel log: %w", err)
			}
		}
	}
	return werr
}

// since returns the kept records with Seq >= seq.
func (l *kernelLog) since(seq uint64) []Record {
	recs := l.recs
	if len(recs) > l.size {
		recs = recs[len(recs)-l.size:]
	}
	for i, r := range recs {
		if r.Seq >= seq {
			return append([]Record(nil), recs[i:]...)
		}
	}
	return nil
}
