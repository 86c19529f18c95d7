package kmsg

import (
	"bytes"
	"encoding/binary"
	"math"
	"time"
	"unicode/utf8"
)

// core turns lines into records for Reader, Device and Follower: it
// detects the form, joins continuation lines, tracks sequence numbers and
// applies Options.Resume. Finished records wait in q.
type core struct {
	opts  Options
	text  textParser
	stats Stats
	q     []Record
	qi    int
	buf   []byte // scratch for unescaping

	// A text record is held until the next line shows whether that line
	// continues it: dmesg prints a multi-line record as one stamped line
	// and indented lines under it.
	pend      Record
	pendMsg   []byte
	pendWidth int // where the message starts in the stamped line
	hasPend   bool
	afterRaw  bool // space-led lines are the raw record's dictionary

	haveSeq   bool
	lastSeq   uint64
	lastMono  time.Duration
	resume    bool // skip records with Seq <= resumeSeq
	resumeSeq uint64
}

func (c *core) init(opts Options) {
	c.opts = opts
	c.text = textParser{opts: opts}
	if r := opts.Resume; r != nil && r.sameBoot(opts.BootID) {
		c.resume, c.resumeSeq = true, r.Seq
	}
}

func (c *core) pop() (Record, bool) {
	if c.qi < len(c.q) {
		// Entries are not cleared: q is short and reused at once.
		rec := c.q[c.qi]
		c.qi++
		c.stats.Records++
		return rec, true
	}
	c.q, c.qi = c.q[:0], 0
	return Record{}, false
}

// line handles one input line, without its newline.
func (c *core) line(line []byte) {
	c.stats.Lines++
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	if !printable(line) {
		if garbage(line) {
			c.stats.Skipped++
			c.flush()
			return
		}
		if !utf8.Valid(line) {
			c.stats.InvalidUTF8++
			line = bytes.ToValidUTF8(line, replacement)
		}
	}
	if len(line) > 0 && (line[0] == ' ' || line[0] == '\t') {
		if c.afterRaw {
			return
		}
		if c.hasPend && c.pendWidth > 0 {
			c.continuation(line)
			return
		}
	}
	if isRawStart(line) {
		c.flush()
		c.raw(line)
		return
	}
	c.afterRaw = false
	var rec Record
	kind, start := c.text.parse(line, &rec)
	switch kind {
	case lineBlank:
		c.flush()
		return
	case lineNotKernel:
		c.stats.NotKernel++
		c.flush()
		return
	}
	msg := line[start:]
	if c.joinSameStamp(&rec, msg) {
		return
	}
	c.flush()
	c.pend, c.pendWidth, c.hasPend = rec, start, true
	c.pendMsg = append(c.pendMsg[:0], msg...)
}

// continuation appends an indented line under the held record, less
// the indent dmesg added (up to the width of the stamp). A record is
// split rather than grown past MaxLineBytes.
func (c *core) continuation(line []byte) {
	n := 0
	for n < len(line) && n < c.pendWidth && line[n] == ' ' {
		n++
	}
	body := line[n:]
	if len(c.pendMsg)+1+len(body) > c.opts.MaxLineBytes {
		rec := c.pend
		c.flush()
		c.pend, c.hasPend = rec, true
		c.pendMsg = append(c.pendMsg[:0], body...)
		return
	}
	c.pendMsg = append(append(c.pendMsg, '\n'), body...)
}

// joinSameStamp appends a line whose message starts with whitespace to
// the held record when both carry the same stamp: a call trace printed
// line by line belongs with the line that announced it.
func (c *core) joinSameStamp(rec *Record, msg []byte) bool {
	if c.opts.SplitSameStamp || !c.hasPend ||
		len(msg) == 0 || (msg[0] != ' ' && msg[0] != '\t') ||
		(!rec.HasMonotonic && rec.Time.IsZero()) ||
		len(c.pendMsg)+1+len(msg) > c.opts.MaxLineBytes {
		return false
	}
	p := &c.pend
	if p.Source != rec.Source || p.HasMonotonic != rec.HasMonotonic || p.Monotonic != rec.Monotonic ||
		!p.Time.Equal(rec.Time) || p.Priority != rec.Priority || p.Facility != rec.Facility {
		return false
	}
	c.pendMsg = append(append(c.pendMsg, '\n'), msg...)
	return true
}

// flush finishes the held text record.
func (c *core) flush() {
	if !c.hasPend {
		return
	}
	c.hasPend = false
	rec := c.pend
	rec.Message = string(c.pendMsg)
	c.emit(rec)
}

// raw handles a raw record line.
func (c *core) raw(b []byte) {
	c.afterRaw = true
	rec, msg, err := parseRawHeader(b)
	if err != nil {
		c.stats.Skipped++
		return
	}
	msg = unescape(&c.buf, msg)
	if !utf8.Valid(msg) {
		c.stats.InvalidUTF8++
		msg = bytes.ToValidUTF8(msg, replacement)
	}
	rec.Message = string(msg)
	c.emit(rec)
}

// tooLong accounts for a line dropped for its length; first is its start.
func (c *core) tooLong(first []byte) {
	c.stats.Lines++
	c.stats.TooLong++
	c.flush()
	c.afterRaw = isRawStart(first)
}

func (c *core) emit(rec Record) {
	if rec.HasSeq && !c.track(rec) {
		c.stats.Filtered++
		return
	}
	c.text.fillTime(&rec)
	c.q = append(c.q, rec)
}

// track follows sequence numbers and reports whether the record is new
// with respect to Options.Resume.
func (c *core) track(rec Record) bool {
	switch {
	case !c.haveSeq:
		c.haveSeq = true
		if c.resume && rec.Seq > c.resumeSeq {
			c.addLost(rec.Seq - c.resumeSeq - 1)
		}
	case rec.Seq > c.lastSeq:
		c.addLost(rec.Seq - c.lastSeq - 1)
	case rec.Seq == 0 || c.lastMono-rec.Monotonic > time.Minute:
		// Numbers and time start over: the stream holds a new boot,
		// which the saved position does not cover.
		c.resume = false
	default:
		c.stats.Reordered++
		return !c.resume || rec.Seq > c.resumeSeq
	}
	c.lastSeq, c.lastMono = rec.Seq, rec.Monotonic
	return !c.resume || rec.Seq > c.resumeSeq
}

func (c *core) addLost(n uint64) {
	c.stats.Lost = int(min(uint64(c.stats.Lost)+min(n, math.MaxInt32), math.MaxInt32))
}

// isRawStart reports a line that starts like a raw record, "6,3964,…":
// digits and a comma, then a digit or a ';' soon after. Such a line that
// does not parse is a damaged record (skipped), not text.
func isRawStart(b []byte) bool {
	i := 0
	for i < len(b) && i < 5 && isDigit(b[i]) {
		i++
	}
	if i == 0 || i == 5 || i+1 >= len(b) || b[i] != ',' {
		return false
	}
	return isDigit(b[i+1]) || bytes.IndexByte(b[i:min(len(b), 64)], ';') >= 0
}

// printable is the fast check that most lines pass: printable ASCII.
// It tests eight bytes at a time; a tab sends a line down the slow path,
// which accepts it.
func printable(b []byte) bool {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	for len(b) >= 8 {
		x := binary.LittleEndian.Uint64(b)
		// A byte under 0x20, or over 0x7e, sets its top bit here.
		if ((x-lo*0x20)&^x|(x+lo)|x)&hi != 0 {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c < ' ' || c >= 0x7f {
			return false
		}
	}
	return true
}

// garbage reports binary data rather than text: a NUL byte, or more
// than a quarter of it control bytes or invalid UTF-8.
func garbage(b []byte) bool {
	if bytes.IndexByte(b, 0) >= 0 {
		return true
	}
	bad := 0
	for i := 0; i < len(b); {
		r, size := rune(b[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRune(b[i:])
		}
		if (r < ' ' && r != '\t') || r == 0x7f || (r == utf8.RuneError && size == 1) {
			bad++
		}
		i += size
	}
	return bad*4 > len(b)
}
