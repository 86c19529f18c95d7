package remediation

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/audit"
)

// TestNewLeaderRebuildsLostAuditRecords loses the records a controller
// queued when it exited (the long soak lost a Detected and a Succeeded
// this way while the audit disk was full) and checks that the next leader
// writes them again from the incident's status, under the same keys, and
// writes nothing twice.
func TestNewLeaderRebuildsLostAuditRecords(t *testing.T) {
	e := newClockEnv(t)
	e.policy("backfill")
	node := e.addNodes("backfill", 1)[0]
	e.runPod("default", "trainer-backfill", node, nil)
	e.breakGPU(node, "replace")
	e.step(2 * time.Minute)
	e.replaceMachine(node, "new")
	e.step(e.opts.Poll)
	nr := e.only(node)
	if nr.Status.Phase != v1alpha1.PhaseSucceeded {
		t.Fatalf("phase %s, want Succeeded", nr.Status.Phase)
	}

	written := e.audit.Records()
	byKey := map[string]audit.Record{}
	for _, r := range written {
		byKey[r.Key] = r
	}
	// What the first leader's store kept: everything but the records a
	// lost buffer held.
	lost := map[audit.Kind]bool{audit.Detected: true, audit.Evicted: true, audit.ActionRequested: true, audit.Succeeded: true}
	kept := audit.NewMemory()
	var lostKeys []string
	for _, r := range written {
		if lost[r.Kind] {
			lostKeys = append(lostKeys, r.Key)
			continue
		}
		r.Seq, r.PrevHash, r.Hash = 0, "", ""
		if err := kept.Write(t.Context(), r); err != nil {
			t.Fatal(err)
		}
	}
	if len(lostKeys) != len(lost) {
		t.Fatalf("the first leader wrote %d records of the kinds to lose (%v), want one of each", len(lostKeys), lostKeys)
	}

	e.step(time.Hour) // the next leader comes later, within the 24h window
	b := &auditBackfill{client: e.c, reader: kept, sink: kept, window: 24 * time.Hour, clock: e.clock.Now}
	n, err := b.run(e.ctx)
	if err != nil || n != len(lost) {
		t.Fatalf("backfill wrote %d records, %v; want the %d lost", n, err, len(lost))
	}
	if n, err := b.run(e.ctx); err != nil || n != 0 {
		t.Errorf("a second backfill wrote %d records, %v; want none", n, err)
	}

	got := map[string]audit.Record{}
	for _, r := range kept.Records() {
		if _, twice := got[r.Key]; twice {
			t.Errorf("record %s stored twice", r.Key)
		}
		got[r.Key] = r
	}
	if !slices.Equal(slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(byKey))) {
		t.Errorf("keys after the rebuild %v, want the first leader's %v", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(byKey)))
	}
	for _, k := range lostKeys {
		r, orig := got[k], byKey[k]
		if r.Kind != orig.Kind || r.Node != orig.Node || r.Policy != orig.Policy || r.Pod != orig.Pod || r.RequestID != orig.RequestID {
			t.Errorf("rebuilt %s = %+v, want the facts of %+v", k, r, orig)
		}
		if !strings.Contains(r.Message, rebuiltNote) {
			t.Errorf("rebuilt %s does not say it was rebuilt: %q", k, r.Message)
		}
		if r.Time.Before(nr.CreationTimestamp.Time) {
			t.Errorf("rebuilt %s at %s, before its incident opened at %s", k, r.Time, nr.CreationTimestamp)
		}
	}
	if r := got[audit.Key(nr.Name, string(audit.Succeeded), len(nr.Status.Phases))]; r.Duration != 2*time.Minute+e.opts.Poll {
		t.Errorf("rebuilt Succeeded has duration %v, want the incident's length", r.Duration)
	}
	if rep, err := kept.Verify(t.Context()); err != nil || !rep.OK {
		t.Errorf("audit chain after the rebuild: %+v %v", rep, err)
	}
}
