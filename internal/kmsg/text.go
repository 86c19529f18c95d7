package kmsg

import (
	"bytes"
	"time"
	"unicode/utf8"
)

// ParseTextLine parses one line of kernel-log text in any of the forms
// the Source constants list; a line with no known prefix is a plain
// record whose message is the whole line. It reports false for blank
// lines and for syslog or journal lines of programs other than the
// kernel (tag not "kernel:"), which are not kernel records. Raw
// /dev/kmsg records are not text: use ParseRecord.
//
// A dmesg --time-format iso line whose fraction is written with a dot,
// "2025-02-23T16:24:18.123456+00:00 usb usb1: …", cannot be told from
// an RFC 3339 syslog line of a program "usb1" without a pid; it is taken
// as a kernel line, because dropping kernel lines is the worse mistake.
func ParseTextLine(line []byte, opts Options) (Record, bool) {
	line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
	p := textParser{opts: opts.withDefaults()}
	var rec Record
	kind, start := p.parse(line, &rec)
	if kind != lineRecord {
		return Record{}, false
	}
	msg := line[start:]
	if !utf8.Valid(msg) {
		msg = bytes.ToValidUTF8(msg, replacement)
	}
	rec.Message = string(msg)
	p.fillTime(&rec)
	return rec, true
}

type lineKind uint8

const (
	lineBlank lineKind = iota
	lineRecord
	lineNotKernel
)

// textParser holds what parsing one line after another can reuse.
type textParser struct {
	opts     Options // defaults applied
	zone     *time.Location
	zoneSecs int
}

// parse fills rec, all but its Message, which is line[start:].
func (p *textParser) parse(line []byte, rec *Record) (kind lineKind, start int) {
	*rec = Record{Priority: -1, Facility: -1, Source: SourcePlain}
	if isBlank(line) {
		return lineBlank, 0
	}
	i := 0
	switch c := line[0]; {
	case c == '<': // "<6>[  12.345678] msg" from /proc/kmsg and dmesg -r
		if j := bytes.IndexByte(line[:min(len(line), 6)], '>'); j > 1 {
			if v, ok := parseDec(line[1:j]); ok && v <= 1023 {
				rec.Priority, rec.Facility, rec.Source = int(v&7), int(v>>3), SourceDmesg
				i = j + 1
			}
		}
	case isLower(c):
		if fac, lvl, n, ok := parseDecode(line); ok {
			rec.Priority, rec.Facility, rec.Source = lvl, fac, SourceDecode
			i = n
		}
	case 'A' <= c && c <= 'Z':
		if t, n, ok := p.bsdStamp(line); ok && n < len(line) && line[n] == ' ' {
			return p.syslog(line, n+1, t, rec)
		}
	}
	stamped := false
	rest := line[i:]
	switch {
	case len(rest) == 0:
	case rest[0] == '[':
		if d, n, ok := parseMono(rest); ok {
			rec.Monotonic, rec.HasMonotonic, stamped = d, true, true
			i += n
			if rec.Source == SourcePlain {
				rec.Source = SourceDmesg
				// journalctl -o short-monotonic: "[  12.345678] host kernel: msg"
				if m, ok := journalMono(line[min(i+1, len(line)):]); ok {
					rec.Source = SourceJournal
					return lineRecord, i + 1 + m
				}
			}
		} else if t, n, ok := parseCtime(rest, p.opts.Location); ok {
			rec.Time, stamped = t, true
			i += n
			if rec.Source == SourcePlain {
				rec.Source = SourceDmesgT
			}
		}
	case isDigit(rest[0]):
		if st, n, ok := parseISO(rest); ok {
			t := p.isoTime(st)
			// dmesg writes a comma; a dot or no fraction may be syslog.
			if st.sep != ',' && rec.Source == SourcePlain && n < len(line) {
				if tag, pid, _, ok := parseSyslogTail(line[n+1:]); ok && (pid || string(tag) == "kernel") {
					return p.syslog(line, n+1, t, rec)
				}
			}
			rec.Time, stamped = t, true
			i += n
			if rec.Source == SourcePlain {
				rec.Source = SourceISO
			}
		}
	}
	// One space ends a stamp; more belong to the message (call-trace
	// lines start with one).
	if stamped && i < len(line) && line[i] == ' ' {
		i++
	}
	return lineRecord, i
}

// syslog finishes a line with a syslog stamp: only the kernel's lines
// are records. rsyslog's imklog keeps the kernel's own "[12345.678901]"
// in the message (SourceSyslog); journalctl -k does not (SourceJournal).
func (p *textParser) syslog(line []byte, i int, t time.Time, rec *Record) (lineKind, int) {
	tag, pid, n, ok := parseSyslogTail(line[i:])
	if !ok || pid || string(tag) != "kernel" {
		return lineNotKernel, 0
	}
	i += n
	rec.Time, rec.Source = t, SourceJournal
	if d, m, ok := parseMono(line[i:]); ok {
		rec.Monotonic, rec.HasMonotonic, rec.Source = d, true, SourceSyslog
		if i += m; i < len(line) && line[i] == ' ' {
			i++
		}
	}
	return lineRecord, i
}

// bsdStamp parses "Feb 23 16:24:18", which has no year: Options.Year, or
// the clock's year unless that puts the stamp over a day in the future
// (December's lines read in January).
func (p *textParser) bsdStamp(line []byte) (time.Time, int, bool) {
	if month(line[:min(len(line), 3)]) == 0 {
		return time.Time{}, 0, false
	}
	year := p.opts.Year
	if year != 0 {
		return parseBSD(line, year, p.opts.Location)
	}
	now := p.opts.Clock.Now().In(p.opts.Location)
	t, n, ok := parseBSD(line, now.Year(), p.opts.Location)
	if ok && t.After(now.Add(24*time.Hour)) {
		t, n, ok = parseBSD(line, now.Year()-1, p.opts.Location)
	}
	return t, n, ok
}

// isoTime builds the time, reusing the last fixed zone: time.FixedZone
// allocates, and a log has one zone.
func (p *textParser) isoTime(st isoStamp) time.Time {
	loc := p.opts.Location
	switch {
	case !st.hasZone:
	case st.zoneSecs == 0:
		loc = time.UTC
	case p.zone != nil && p.zoneSecs == st.zoneSecs:
		loc = p.zone
	default:
		p.zone, p.zoneSecs = time.FixedZone("", st.zoneSecs), st.zoneSecs
		loc = p.zone
	}
	return time.Date(st.year, time.Month(st.mon), st.day, st.h, st.m, st.s, st.nsec, loc)
}

// fillTime gives a record with only a monotonic stamp a wall time.
func (p *textParser) fillTime(rec *Record) {
	if rec.Time.IsZero() && rec.HasMonotonic && !p.opts.BootTime.IsZero() {
		rec.Time = p.opts.BootTime.Add(rec.Monotonic)
	}
}

// journalMono checks for "host kernel: " after journalctl's
// short-monotonic stamp; the cheap look for "kernel:" first keeps it off
// the profile of plain dmesg lines.
func journalMono(b []byte) (int, bool) {
	j := bytes.IndexByte(b, ' ')
	if j <= 0 || !bytes.HasPrefix(b[j+1:], []byte("kernel:")) {
		return 0, false
	}
	tag, pid, n, ok := parseSyslogTail(b)
	return n, ok && !pid && string(tag) == "kernel"
}

func isBlank(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' {
			return false
		}
	}
	return true
}
