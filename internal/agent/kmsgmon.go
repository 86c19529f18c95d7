package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/gpuheal/gpuheal/internal/detect"
	"github.com/gpuheal/gpuheal/internal/finding"
	"github.com/gpuheal/gpuheal/internal/kmsg"
	"github.com/gpuheal/gpuheal/internal/xid"
)

// kmsgMonitor reads the kernel log (the ring buffer through syslog(2), the
// /dev/kmsg device, or a followed file such as the sim's log), turns records into findings, and remembers
// its position so that after a restart nothing is reported twice or
// skipped, and after a reboot it starts at the new boot.
type kmsgMonitor struct {
	path       string
	stateDir   string
	bootIDPath string
	catalog    xid.Catalog
	poll       time.Duration
	log        *slog.Logger
	onFinding  func(finding.Finding)
	// openSyslog opens the syslog(2) ring (kmsg.OpenSyslog when nil;
	// tests hand a fake ring).
	openSyslog func(kmsg.Options) (*kmsg.Syslog, error)

	// catalogs carries a new Xid catalog after a config reload; the
	// detector is rebuilt between two records.
	catalogs chan xid.Catalog

	mu      sync.Mutex
	statsFn func() kmsg.Stats
	pos     kmsg.Position
	saved   kmsg.Position
	// journal keeps the fatal findings of this boot (nil without a
	// state directory); a verified GPU reset drops that GPU's.
	journal *findingJournal
}

// savePositionEvery bounds how often the position is written while only
// noise goes by. A record that produced a finding is saved at once, so a
// crash can make the agent re-read noise but never report a finding twice.
const savePositionEvery = time.Second

func (m *kmsgMonitor) run(ctx context.Context) error {
	boot, err := kmsg.ReadBootID(m.bootIDPath)
	if err != nil {
		m.log.Warn("no boot id; resuming by sequence number only", "err", err)
	}
	// The syslog(2) ring numbers records by their stamp, not by the
	// kernel's sequence numbers: its position lives apart, so switching
	// modes neither repeats nor skips a boot's records.
	if m.path == kmsg.SyslogSource && m.stateDir != "" {
		m.stateDir = filepath.Join(m.stateDir, kmsg.SyslogSource)
		if err := os.MkdirAll(m.stateDir, 0o755); err != nil {
			return fmt.Errorf("creating the kernel-log state directory: %w", err)
		}
	}
	var resume *kmsg.Position
	if m.stateDir != "" {
		p, err := kmsg.LoadPosition(m.stateDir)
		if err != nil {
			m.log.Warn("kernel-log position unreadable; reading the whole ring", "dir", m.stateDir, "err", err)
		} else if p != (kmsg.Position{}) {
			resume = &p
		}
	}
	opts := kmsg.Options{Resume: resume, BootID: boot, Start: kmsg.StartOldest, PollInterval: m.poll}
	m.pos = kmsg.Position{BootID: boot}
	if resume != nil && resume.BootID == boot {
		m.pos = *resume
	}
	m.saved = m.pos

	det := detect.New(m.catalog, detect.Options{Source: "kmsg"})
	var buf []finding.Finding
	lastSave := time.Now()
	emit := func(rec kmsg.Record) error {
		select {
		case cat := <-m.catalogs:
			det = detect.New(cat, detect.Options{Source: "kmsg"})
		default:
		}
		buf = buf[:0]
		// Facility 0 is the kernel's own; user space that writes to
		// /dev/kmsg always gets another (the kernel makes 0 into LOG_USER),
		// so such a record is an application's words, never a finding.
		if rec.Facility <= 0 {
			buf = det.Append(buf, rec.Message, recordTime(rec))
		}
		for _, f := range buf {
			m.onFinding(f)
		}
		m.mu.Lock()
		if rec.HasSeq {
			m.pos.Seq = rec.Seq
		}
		m.mu.Unlock()
		if len(buf) > 0 || time.Since(lastSave) >= savePositionEvery {
			m.savePosition()
			lastSave = time.Now()
		}
		return nil
	}
	defer m.savePosition()

	if m.path == kmsg.SyslogSource {
		open := m.openSyslog
		if open == nil {
			open = kmsg.OpenSyslog
		}
		s, err := open(opts)
		if err != nil {
			return err
		}
		m.setStats(s.Stats)
		return s.Run(ctx, emit)
	}
	if isCharDevice(m.path) {
		return m.readDevice(ctx, opts, emit)
	}
	f := kmsg.NewFollower(m.path, opts)
	m.setStats(f.Stats)
	return f.Run(ctx, emit)
}

func (m *kmsgMonitor) readDevice(ctx context.Context, opts kmsg.Options, emit func(kmsg.Record) error) error {
	dev, err := kmsg.OpenDevice(m.path, opts)
	if err != nil {
		return fmt.Errorf("opening kernel log %s: %w", m.path, err)
	}
	m.setStats(dev.Stats)
	// Closing the device unblocks a Next waiting for the kernel.
	stop := context.AfterFunc(ctx, func() { _ = dev.Close() })
	defer stop()
	for {
		rec, err := dev.Next()
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, io.EOF):
			return nil
		case err != nil:
			return fmt.Errorf("reading kernel log %s: %w", m.path, err)
		}
		if err := emit(rec); err != nil {
			return err
		}
	}
}

// recordTime is the record's wall time, or now for records that carry
// only a monotonic stamp: they are being read as they are written.
func recordTime(rec kmsg.Record) time.Time {
	if !rec.Time.IsZero() {
		return rec.Time
	}
	return time.Now()
}

func (m *kmsgMonitor) savePosition() {
	m.mu.Lock()
	pos, saved := m.pos, m.saved
	m.mu.Unlock()
	if m.stateDir == "" || pos == saved {
		return
	}
	if err := kmsg.SavePosition(m.stateDir, pos); err != nil {
		m.log.Warn("saving kernel-log position", "dir", m.stateDir, "err", err)
		return
	}
	m.mu.Lock()
	m.saved = pos
	m.mu.Unlock()
}

func (m *kmsgMonitor) setStats(fn func() kmsg.Stats) {
	m.mu.Lock()
	m.statsFn = fn
	m.mu.Unlock()
}

// Stats returns the reader's counters (zero before it starts).
func (m *kmsgMonitor) Stats() kmsg.Stats {
	m.mu.Lock()
	fn := m.statsFn
	m.mu.Unlock()
	if fn == nil {
		return kmsg.Stats{}
	}
	return fn()
}

func isCharDevice(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// setCatalog hands the monitor a new Xid catalog (a reloaded config's
// overrides); the newest one wins.
func (m *kmsgMonitor) setCatalog(cat xid.Catalog) {
	for {
		select {
		case m.catalogs <- cat:
			return
		default:
			select {
			case <-m.catalogs:
			default:
			}
		}
	}
}
