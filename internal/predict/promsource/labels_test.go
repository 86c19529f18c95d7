package promsource

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuheal/gpuheal/internal/audit"
	"github.com/gpuheal/gpuheal/internal/predict/trace"
)

var t0 = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)

func detected(inc, node, reason string, at, since time.Time, gpus ...string) audit.Record {
	cond := "AcceleratedHardwareReady"
	if reason == "HungTask" {
		cond = "KernelReady"
	}
	return audit.Record{Incident: inc, Node: node, Kind: audit.Detected, Reason: reason, Time: at, GPUs: gpus,
		Message: cond + "=False since " + since.Format(time.RFC3339) + ": " + reason}
}

func ended(inc string, k audit.Kind, at time.Time) audit.Record {
	return audit.Record{Incident: inc, Kind: k, Time: at}
}

func TestLabel(t *testing.T) {
	h := func(n float64) time.Time { return t0.Add(time.Duration(n * float64(time.Hour))) }
	slot := func(gpu int, node, uuid string, first, last float64) Slot {
		return Slot{GPU: gpu, Node: node, UUID: uuid, First: h(first), Last: h(last)}
	}
	slots := []Slot{
		slot(0, "a", "GPU-a0", 0, 48), slot(1, "a", "GPU-a1", 0, 48),
		slot(2, "b", "GPU-b0", 0, 48), slot(3, "b", "GPU-b1", 0, 10), // b1 left the fleet at 10 h
		slot(4, "c", "GPU-c0", 0, 48), // named below under a node name the metrics do not carry
	}
	recs := []audit.Record{
		// Named GPU; the condition's time is 2 minutes before the record.
		detected("i1", "a", "NvidiaXID79Error", h(5), h(5).Add(-2*time.Minute), "GPU-a1"),
		ended("i1", audit.Decided, h(5.1)),
		ended("i1", audit.Recovered, h(6)),
		ended("i1", audit.Succeeded, h(6.5)),
		// No GPU named: every GPU of node b that reported then; b1 had
		// stopped reporting more than aliveSlack before.
		detected("i2", "b", "NvidiaDriverUnavailable", h(20), h(20)),
		ended("i2", audit.Failed, h(21)),
		// Named GPU on a node the metrics call otherwise: matched by UUID.
		detected("i3", "renamed", "NvidiaDoubleBitError", h(30), h(30), "GPU-c0"),
		// Inside i1's outage on the same GPU: joined to it.
		detected("i4", "a", "NvidiaNVLinkDown", h(5.5), h(5.5), "GPU-a1"),
		ended("i4", audit.Succeeded, h(7)),
		// Not GPU failures.
		detected("k", "a", "HungTask", h(8), h(8)),
		detected("m", "a", "NvidiaDriverMismatch", h(9), h(9)),
		// A GPU with no telemetry.
		detected("u", "z", "NvidiaXID79Error", h(9), h(9), "GPU-zz"),
		// Still open at the end; its message does not say when.
		{Incident: "o", Node: "a", Kind: audit.Detected, Reason: "NvidiaGPUMissing", Time: h(40), GPUs: []string{"GPU-a0"},
			Message: "something else"},
	}
	got, rep := Label(recs, slots, LabelOptions{End: h(48)})
	want := []trace.Failure{
		{GPU: 0, Time: h(40), RepairedAt: h(48), Class: "NvidiaGPUMissing"},
		{GPU: 1, Time: h(5).Add(-2 * time.Minute), RepairedAt: h(7), Class: "NvidiaXID79Error"},
		{GPU: 2, Time: h(20), RepairedAt: h(21), Class: "NvidiaDriverUnavailable"},
		{GPU: 4, Time: h(30), RepairedAt: h(48), Class: "NvidiaDoubleBitError"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("failures (-want +got):\n%s", diff)
	}
	wantRep := LabelReport{Incidents: 8, Failures: 4, NodeWide: 1, Merged: 1,
		Ignored: map[string]int{"KernelReady": 1, "NvidiaDriverMismatch": 1}, Unmatched: []string{"u"}}
	if diff := cmp.Diff(wantRep, rep); diff != "" {
		t.Errorf("report (-want +got):\n%s", diff)
	}
}

func TestParseDetected(t *testing.T) {
	for _, tc := range []struct {
		msg   string
		cond  string
		since time.Time
		ok    bool
	}{
		{"AcceleratedHardwareReady=False since 2026-03-01T00:00:00Z: GPU GPU-1 Xid 79", "AcceleratedHardwareReady", t0, true},
		{"KernelReady=Unknown since 2026-03-01T01:00:00+01:00: x", "KernelReady", t0, true},
		{"KernelReady=False since yesterday: x", "KernelReady", time.Time{}, false},
		{"a message", "", time.Time{}, false},
		{"two words=False since 2026-03-01T00:00:00Z: x", "", time.Time{}, false},
	} {
		cond, since, ok := parseDetected(tc.msg)
		if cond != tc.cond || !since.Equal(tc.since) || ok != tc.ok {
			t.Errorf("parseDetected(%q) = %q, %s, %v; want %q, %s, %v", tc.msg, cond, since, ok, tc.cond, tc.since, tc.ok)
		}
	}
}

func FuzzParseDetected(f *testing.F) {
	f.Add("AcceleratedHardwareReady=False since 2026-03-01T00:00:00Z: GPU GPU-1 Xid 79")
	f.Add("KernelReady=False since 2026-03-01T00:00:00.123+05:30:")
	f.Add("=since  since :")
	f.Fuzz(func(t *testing.T, msg string) {
		cond, since, ok := parseDetected(msg)
		if ok && (cond == "" || since.IsZero()) {
			t.Fatalf("parseDetected(%q) = %q, %s, ok", msg, cond, since)
		}
		if !ok || since.Year() < 0 || since.Year() > 9999 {
			return
		}
		// What the controller would write for it reads back the same.
		again := cond + "=False since " + since.Format(time.RFC3339Nano) + ": x"
		c2, s2, ok2 := parseDetected(again)
		if !ok2 || c2 != cond || !s2.Equal(since) {
			t.Fatalf("%q read back as %q, %s, %v", again, c2, s2, ok2)
		}
	})
}
