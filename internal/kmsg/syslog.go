package kmsg

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// SyslogSource names the kernel's ring buffer read through syslog(2)
// where a path is expected (the agent's --kmsg-path).
const SyslogSource = "syslog"

// Syslog polls the kernel's ring buffer with syslog(2)
// SYSLOG_ACTION_READ_ALL, which needs only CAP_SYSLOG (or
// kernel.dmesg_restrict=0) and no device: a container can open /dev/kmsg
// only when privileged or given the device by a plugin, but this call is
// allowed to any process holding the capability (the container runtimes'
// default seccomp profiles allow it with CAP_SYSLOG).
//
// The call returns the ring as text, "<6>[  12.345678] msg" per line,
// oldest first, without sequence numbers; the kernel's monotonic stamp,
// in microseconds, stands in for one (Record.Seq), so positions and
// Options.Resume work as with the device. Records without a stamp (a
// kernel booted with printk.time=0) cannot be told apart between polls
// and are skipped and counted in Stats.Skipped. Records the ring drops
// between two polls are lost unseen, and so is a record that shares its
// microsecond with the newest one of the poll before.
type Syslog struct {
	read func([]byte) (int, error)
	opts Options
	buf  []byte
	last uint64 // stamp of the newest record returned, in µs
	have bool

	mu    sync.Mutex
	stats Stats
}

// NewSyslog returns a Syslog that fills buf-sized reads with read, which
// must copy the whole ring into its argument as SYSLOG_ACTION_READ_ALL
// does (OpenSyslog passes the real call; tests pass a fake).
func NewSyslog(read func([]byte) (int, error), size int, opts Options) *Syslog {
	s := &Syslog{read: read, opts: opts.withDefaults(), buf: make([]byte, size)}
	if r := s.opts.Resume; r != nil && r.sameBoot(s.opts.BootID) {
		s.last, s.have = r.Seq, true
	}
	return s
}

// Run polls every Options.PollInterval until ctx ends (it then returns
// nil), calling emit for each new record. It returns emit's first error or
// a failed syslog(2) call.
func (s *Syslog) Run(ctx context.Context, emit func(Record) error) error {
	t := s.opts.Clock.NewTicker(s.opts.PollInterval)
	defer t.Stop()
	for {
		if err := s.Poll(emit); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		}
	}
}

// Poll reads the ring once and emits the records newer than the last one.
func (s *Syslog) Poll(emit func(Record) error) error {
	n, err := s.read(s.buf)
	if err != nil {
		return fmt.Errorf("reading the kernel log through syslog(2): %w", err)
	}
	ring := s.buf[:max(0, min(n, len(s.buf)))]
	if s.have {
		ring = ring[newerFrom(ring, s.last):]
	}
	opts := s.opts
	opts.Resume = nil
	rd := NewReader(bytes.NewReader(ring), opts)
	// Records of one poll that share a stamp are all new; only those at
	// or before the last poll's newest are not.
	base, seen := s.last, s.have
	var skipped, emitted int
	for {
		rec, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if !rec.HasMonotonic {
			skipped++
			continue
		}
		seq := uint64(rec.Monotonic / time.Microsecond)
		if seen && seq <= base {
			continue
		}
		rec.Seq, rec.HasSeq = seq, true
		s.last, s.have = max(s.last, seq), true
		emitted++
		if err := emit(rec); err != nil {
			return err
		}
	}
	st := rd.Stats()
	s.mu.Lock()
	s.stats.Lines += st.Lines
	s.stats.Records += emitted
	s.stats.Skipped += st.Skipped + skipped
	s.stats.TooLong += st.TooLong
	s.stats.InvalidUTF8 += st.InvalidUTF8
	s.mu.Unlock()
	return nil
}

// Stats returns the counts so far; safe from any goroutine.
func (s *Syslog) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// newerFrom is the offset of the first line after the newest line stamped
// at or before last, found from the end, so that a poll with nothing new
// costs a few lines and not the whole ring. Lines without a stamp are
// passed over; the records parsed from the offset on are filtered again.
func newerFrom(ring []byte, last uint64) int {
	end := len(ring)
	for end > 0 {
		start := bytes.LastIndexByte(ring[:end-1], '\n') + 1
		if us, ok := lineStamp(ring[start:end]); ok && us <= last {
			return end
		}
		end = start
	}
	return 0
}

// lineStamp reads the "[  12.345678]" stamp of a "<6>[  12.345678] msg"
// line, in microseconds.
func lineStamp(line []byte) (uint64, bool) {
	i := bytes.IndexByte(line, '[')
	j := bytes.IndexByte(line, ']')
	if i < 0 || j < i || i > 5 {
		return 0, false
	}
	sec, frac, ok := bytes.Cut(bytes.TrimLeft(line[i+1:j], " "), []byte("."))
	if !ok || len(frac) != 6 {
		return 0, false
	}
	s, ok1 := parseDec(sec)
	us, ok2 := parseDec(frac)
	if !ok1 || !ok2 || s > 1<<40 {
		return 0, false
	}
	return s*1_000_000 + us, true
}
