package detect

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuheal/gpuheal/internal/finding"
	"github.com/gpuheal/gpuheal/internal/xid"
)

func xid13(bus string) string {
	return "NVRM: Xid (PCI:" + bus + "): 13, pid='<unknown>', name=<unknown>, Graphics SM Warp Exception on (GPC 9, TPC 1, SM 1): Out Of Range Address"
}

// TestCountThresholdOverride walks a user's "13: fatal at 3 within 10m"
// through fake times: below the count findings keep the catalog's base
// severity, once crossed they take the override's, and bursts count once.
func TestCountThresholdOverride(t *testing.T) {
	ov, err := xid.ParseOverrides([]byte("xid: {13: {severity: fatal, count: 3, window: 10m}}"))
	if err != nil {
		t.Fatal(err)
	}
	cat, err := xid.Default().WithOverrides(ov)
	if err != nil {
		t.Fatal(err)
	}
	d := New(cat, Options{})
	type step struct {
		at  time.Duration
		bus string
		sev finding.Severity
		act finding.Action
	}
	steps := []step{
		{0, "0000:38:00", warning, restartApp},
		{time.Millisecond, "0000:38:00", warning, restartApp}, // same burst
		{2 * time.Millisecond, "0000:38:00", warning, restartApp},
		{time.Minute, "0000:38:00", warning, restartApp},
		{time.Minute, "0000:18:00", warning, restartApp}, // other GPU, own count
		{2 * time.Minute, "0000:38:00", fatal, resetGPU}, // third occurrence within 10m
		{2*time.Minute + time.Millisecond, "0000:38:00", fatal, resetGPU},
		{5 * time.Minute, "0000:38:00", fatal, resetGPU},
		{30 * time.Minute, "0000:38:00", warning, restartApp}, // the window moved on
	}
	for i, s := range steps {
		got := d.Detect(xid13(s.bus), t0.Add(s.at))
		if len(got) != 1 {
			t.Fatalf("step %d: %d findings, want 1", i, len(got))
		}
		if got[0].Severity != s.sev || got[0].Action != s.act {
			t.Errorf("step %d (+%v on %s): %s/%s, want %s/%s", i, s.at, s.bus, got[0].Severity, got[0].Action, s.sev, s.act)
		}
	}
}

func TestDefaultThresholdOf31(t *testing.T) {
	d := newDetector(t)
	line := "NVRM: Xid (PCI:0000:08:00): 31, Ch 0000003b, intr 10000000. MMU Fault: ENGINE GRAPHICS HUBCLIENT_SCC faulted @ 0x0_04687000. Fault is of type FAULT_PDE ACCESS_TYPE_READ"
	var sevs []finding.Severity
	for _, at := range []time.Duration{0, time.Hour, 50 * time.Hour} {
		sevs = append(sevs, d.Detect(line, t0.Add(at))[0].Severity)
	}
	if diff := cmp.Diff([]finding.Severity{info, warning, info}, sevs); diff != "" {
		t.Errorf("Xid 31 at 0, 1h, 50h (-want +got):\n%s", diff)
	}
}

// TestZeroTimeCountsAtNow: a message without a time still counts, at the
// injected clock's time, and its finding keeps the zero time.
func TestZeroTimeCountsAtNow(t *testing.T) {
	cat, err := xid.Default().WithOverrides(map[uint64]xid.Override{79: {Count: 2, Window: time.Minute, Severity: fatal, Action: replace}})
	if err != nil {
		t.Fatal(err)
	}
	now := t0
	d := New(cat, Options{Now: func() time.Time { return now }})
	line := "NVRM: Xid (PCI:0000:05:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."
	first := d.Detect(line, time.Time{})
	now = now.Add(10 * time.Second)
	second := d.Detect(line, time.Time{})
	if first[0].Action != reboot || second[0].Action != replace || !second[0].Time.IsZero() {
		t.Errorf("got %+v then %+v; want reboot, then replace with a zero time", first[0], second[0])
	}
}
