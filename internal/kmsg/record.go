package kmsg

import (
	"bytes"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"
)

// Sources: the form a record was read in.
const (
	SourceKmsg   = "kmsg"    // raw /dev/kmsg record: "6,3964,206764307,-;msg"
	SourceDmesg  = "dmesg"   // "[12345.678901] msg", also "<6>[12345.678901] msg"
	SourceDmesgT = "dmesg-T" // "[Sun Feb 23 16:24:18 2025] msg"
	SourceISO    = "iso"     // dmesg --time-format iso: "2025-02-23T16:24:18,123456+00:00 msg"
	SourceDecode = "decode"  // dmesg --decode: "kern  :warn  : msg", with or without a stamp
	// SourceSyslog is a kernel line of a syslog file that kept the
	// kernel's own stamp: "Feb 23 16:24:18 host kernel: [12345.678901] msg"
	// (or an RFC 3339 stamp first).
	SourceSyslog = "syslog"
	// SourceJournal is a syslog-stamped kernel line without it, as
	// journalctl -k prints: "Feb 23 16:24:18 host kernel: msg", also
	// "2025-02-23T16:24:18.123456+00:00 host kernel: msg" and
	// "[12345.678901] host kernel: msg" (-o short-monotonic).
	SourceJournal = "journal"
	SourcePlain   = "plain" // no prefix known: the whole line is the message
)

// Record is one kernel-log record.
type Record struct {
	Seq    uint64 // sequence number; only raw records have one
	HasSeq bool
	// Priority is the syslog level, 0 (emerg) to 7 (debug); -1 when
	// the form does not carry it.
	Priority int
	// Facility is the syslog facility, 0 for the kernel's own messages;
	// -1 when unknown. Anything else was written by user space.
	Facility int
	// Monotonic is the time since boot the kernel stamped.
	Monotonic    time.Duration
	HasMonotonic bool
	// Time is the wall time: printed in the line, or Options.BootTime +
	// Monotonic. Zero when neither is known.
	Time time.Time
	// Message is the text, always valid UTF-8. A multi-line record's
	// lines are joined with "\n"; raw records' \xHH escapes are decoded.
	Message string
	// Continued is set on raw records the kernel flagged 'c' or '+': a
	// fragment of a line printed in pieces (KERN_CONT); the rest of the
	// line, if any, is in the neighbouring records.
	Continued bool
	Source    string
}

// ParseRecord parses one raw /dev/kmsg record, "prio,seq,usec,flags[,
// more];message", as one read(2) of the device returns it: dictionary
// lines (" KEY=VALUE") after the first newline are ignored.
func ParseRecord(line []byte) (Record, error) {
	rec, msg, err := parseRawHeader(firstLine(line))
	if err != nil {
		return Record{}, err
	}
	var buf []byte
	msg = unescape(&buf, msg)
	if !utf8.Valid(msg) {
		msg = bytes.ToValidUTF8(msg, replacement)
	}
	rec.Message = string(msg)
	return rec, nil
}

var replacement = []byte("\uFFFD")

// parseRawHeader parses the header of a record line (no newline) in one
// pass, and returns the record without its Message, and the
// still-escaped message bytes.
func parseRawHeader(line []byte) (Record, []byte, error) {
	if len(line) == 0 {
		return Record{}, nil, errEmpty
	}
	var v [3]uint64
	i := 0
	for k := range v {
		n, j, ok := decField(line, i)
		if !ok || (k == 0 && n > 1023) || (k == 2 && n > maxUsec) {
			return Record{}, nil, rawHeaderError(line, k, i)
		}
		v[k], i = n, j+1
	}
	if i+1 >= len(line) || (line[i] != '-' && line[i] != 'c' && line[i] != '+') ||
		(line[i+1] != ';' && line[i+1] != ',') {
		return Record{}, nil, rawHeaderError(line, 3, i)
	}
	msg := i + 2
	if line[i+1] == ',' { // more fields, such as caller=T123
		semi := bytes.IndexByte(line[msg:], ';')
		if semi < 0 {
			return Record{}, nil, rawHeaderError(line, 4, i)
		}
		msg += semi + 1
	}
	rec := Record{
		Seq: v[1], HasSeq: true,
		Priority: int(v[0] & 7), Facility: int(v[0] >> 3),
		Monotonic: time.Duration(v[2]) * time.Microsecond, HasMonotonic: true,
		Continued: line[i] != '-',
		Source:    SourceKmsg,
	}
	return rec, line[msg:], nil
}

// decField parses the decimal number at line[i:] that a comma ends.
func decField(line []byte, i int) (n uint64, end int, ok bool) {
	const cutoff = (1<<64 - 1) / 10
	j := i
	for ; j < len(line) && isDigit(line[j]); j++ {
		d := uint64(line[j] - '0')
		if n > cutoff || (n == cutoff && d > 5) {
			return 0, j, false
		}
		n = n*10 + d
	}
	return n, j, j > i && j < len(line) && line[j] == ','
}

// rawHeaderError says what is wrong with field k (4: the header's end),
// which starts at line[start:]; it runs only for broken records.
func rawHeaderError(line []byte, k, start int) error {
	semi := bytes.IndexByte(line, ';')
	if semi < 0 || k == 4 {
		return fmt.Errorf("record %q has no ';' ending its header", clip(line))
	}
	hdr := line[:semi]
	f := hdr[min(start, len(hdr)):]
	if j := bytes.IndexByte(f, ','); j >= 0 {
		f = f[:j]
	} else if k < 3 {
		return fmt.Errorf("record header %q has %d fields, want prio,seq,usec,flags", clip(hdr), k+1)
	}
	want := [...]string{"a number 0-1023", "a decimal number", "microseconds since boot", "'-', 'c' or '+'"}[k]
	return fmt.Errorf("%s field %q: want %s", [...]string{"priority", "seq", "usec", "flags"}[k], clip(f), want)
}

const maxUsec = uint64(1<<63-1) / 1000

// unescape decodes the kernel's \xHH escapes. It returns msg itself when
// there is nothing to decode, else the decoded bytes in *buf, reused.
func unescape(buf *[]byte, msg []byte) []byte {
	i := bytes.IndexByte(msg, '\\')
	if i < 0 {
		return msg
	}
	out := append((*buf)[:0], msg[:i]...)
	for ; i < len(msg); i++ {
		c := msg[i]
		if c == '\\' && i+3 < len(msg) && msg[i+1] == 'x' {
			hi, ok1 := unhex(msg[i+2])
			lo, ok2 := unhex(msg[i+3])
			if ok1 && ok2 {
				out = append(out, hi<<4|lo)
				i += 3
				continue
			}
		}
		// A lone backslash is not something the kernel writes; keep it.
		out = append(out, c)
	}
	*buf = out
	return out
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// firstLine drops the dictionary lines after a record's first line.
func firstLine(b []byte) []byte {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		return b[:i]
	}
	return b
}

// parseDec parses a non-empty run of decimal digits without overflow.
func parseDec(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if n > (1<<64-1-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}

// clip keeps error messages short when a line is huge.
func clip(b []byte) []byte {
	const n = 64
	if len(b) > n {
		return b[:n]
	}
	return b
}

var errEmpty = errors.New("empty record")
