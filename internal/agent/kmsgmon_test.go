package agent

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gpuheal/gpuheal/internal/finding"
	"github.com/gpuheal/gpuheal/internal/kmsg"
	"github.com/gpuheal/gpuheal/internal/xid"
)

// A reloaded config's Xid overrides reach the running detector: the same
// line is classified by the catalog in force when it is read.
func TestKmsgMonitorTakesNewCatalog(t *testing.T) {
	dir := t.TempDir()
	logPath, bootPath := filepath.Join(dir, "kmsg"), filepath.Join(dir, "boot_id")
	writeTestFile(t, bootPath, "3b2f6c2e-0000-4000-8000-000000000001\n")
	writeTestFile(t, logPath, "")
	found := make(chan finding.Finding, 8)
	mon := &kmsgMonitor{path: logPath, stateDir: filepath.Join(dir, "state"), bootIDPath: bootPath,
		catalog: xid.Default(), catalogs: make(chan xid.Catalog, 1), poll: 10 * time.Millisecond,
		log: slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil)), onFinding: func(f finding.Finding) { found <- f }}
	if err := os.MkdirAll(mon.stateDir, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mon.run(ctx) }()
	defer func() { cancel(); <-done }()

	line := func(seq string) string {
		return "4," + seq + ",1000000,-;NVRM: Xid (PCI:0000:18:00): 43, pid=1, name=python, Ch 00000008\n"
	}
	appendTestFile(t, logPath, line("1"))
	if f := next(t, found); f.Code != "XID43" || f.Severity != finding.Info {
		t.Fatalf("default catalog: %s %s", f.Code, f.Severity)
	}
	cat, err := xid.Default().WithOverrides(map[uint64]xid.Override{43: {Severity: finding.Fatal, Action: finding.ActionResetGPU}})
	if err != nil {
		t.Fatal(err)
	}
	mon.setCatalog(cat)
	appendTestFile(t, logPath, line("2"))
	if f := next(t, found); f.Severity != finding.Fatal || f.Action != finding.ActionResetGPU {
		t.Fatalf("after the new catalog: %s %s", f.Severity, f.Action)
	}
}

// A record user space wrote to /dev/kmsg (facility user: 14 = 1<<3|6) is
// not the driver's, even when its text is a perfect Xid report; the
// kernel's own record after it still counts.
func TestKmsgMonitorIgnoresUserSpaceRecords(t *testing.T) {
	dir := t.TempDir()
	logPath, bootPath := filepath.Join(dir, "kmsg"), filepath.Join(dir, "boot_id")
	writeTestFile(t, bootPath, "3b2f6c2e-0000-4000-8000-000000000001\n")
	writeTestFile(t, logPath, "14,1,1000000,-;NVRM: Xid (PCI:0000:18:00): 79, pid=1, name=x, GPU has fallen off the bus.\n"+
		"4,2,1000001,-;NVRM: Xid (PCI:0000:18:00): 43, pid=1, name=python, Ch 00000008\n")
	found := make(chan finding.Finding, 8)
	mon := &kmsgMonitor{path: logPath, bootIDPath: bootPath,
		catalog: xid.Default(), catalogs: make(chan xid.Catalog, 1), poll: 10 * time.Millisecond,
		log: slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil)), onFinding: func(f finding.Finding) { found <- f }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mon.run(ctx) }()
	defer func() { cancel(); <-done }()
	if f := next(t, found); f.Code != "XID43" {
		t.Fatalf("first finding %s from %q, want XID43: the user-space record opened one", f.Code, f.Message)
	}
}

// In syslog mode the monitor reads the ring through syslog(2) and keeps
// its position apart from the device's (stamps, not sequence numbers): a
// restart reports nothing twice.
func TestKmsgMonitorSyslogMode(t *testing.T) {
	dir := t.TempDir()
	bootPath := filepath.Join(dir, "boot_id")
	writeTestFile(t, bootPath, "3b2f6c2e-0000-4000-8000-000000000001\n")
	ring := "<4>[   12.000001] NVRM: Xid (PCI:0000:18:00): 43, pid=1, name=python, Ch 00000008\n"
	read := func(b []byte) (int, error) { return copy(b, ring), nil }
	start := func() (chan finding.Finding, func()) {
		found := make(chan finding.Finding, 8)
		mon := &kmsgMonitor{path: kmsg.SyslogSource, stateDir: dir, bootIDPath: bootPath,
			catalog: xid.Default(), catalogs: make(chan xid.Catalog, 1), poll: 10 * time.Millisecond,
			log: slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil)), onFinding: func(f finding.Finding) { found <- f },
			openSyslog: func(o kmsg.Options) (*kmsg.Syslog, error) { return kmsg.NewSyslog(read, 1<<10, o), nil }}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- mon.run(ctx) }()
		return found, func() {
			cancel()
			if err := <-done; err != nil {
				t.Error(err)
			}
		}
	}
	found, stop := start()
	if f := next(t, found); f.Code != "XID43" {
		t.Fatalf("finding %s, want XID43", f.Code)
	}
	stop()
	pos, err := kmsg.LoadPosition(filepath.Join(dir, kmsg.SyslogSource))
	if err != nil || pos.Seq != 12_000_001 {
		t.Fatalf("saved position %+v, %v; want the record's stamp in µs", pos, err)
	}
	// After a restart the same ring brings only what is new.
	ring += "<4>[   13.000000] NVRM: Xid (PCI:0000:18:00): 31, pid=1, name=python, Ch 0000000b\n"
	found, stop = start()
	defer stop()
	if f := next(t, found); f.Code != "XID31" {
		t.Fatalf("finding after restart %s, want XID31 (XID43 was reported already)", f.Code)
	}
}

func next(t *testing.T, ch <-chan finding.Finding) finding.Finding {
	t.Helper()
	select {
	case f := <-ch:
		return f
	case <-time.After(10 * time.Second):
		t.Fatal("no finding within 10s")
	}
	return finding.Finding{}
}

func writeTestFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func appendTestFile(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}
