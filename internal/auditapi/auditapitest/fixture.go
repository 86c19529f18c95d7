// Package auditapitest writes a small audit log with known incidents, for
// the tests of the audit API and the CLI.
package auditapitest

import (
	"context"
	"testing"
	"time"

	"github.com/gpuheal/gpuheal/internal/audit"
	"github.com/gpuheal/gpuheal/internal/audit/sqlite"
)

// The incidents of Records.
const (
	// OldIncident, on NodeA, failed 30 hours before now.
	OldIncident = "gpu-a-0000"
	// DoneIncident, on NodeA, opened 3 hours before now and succeeded.
	DoneIncident = "gpu-a-1111"
	// OpenIncident, on NodeB, opened 1 hour before now and is draining.
	OpenIncident = "gpu-b-2222"
	NodeA        = "gpu-a"
	NodeB        = "gpu-b"
)

// Records are three incidents as the controller would write them, oldest
// first, relative to now.
func Records(now time.Time) []audit.Record {
	var out []audit.Record
	add := func(at time.Duration, r audit.Record) {
		r.Time = now.Add(at)
		r.Policy = "default"
		r.Key = audit.Key(r.Incident, string(r.Kind), 0)
		if r.Pod != "" {
			r.Key = audit.Key(r.Incident, "evict/"+r.Pod, 0)
		}
		out = append(out, r)
	}
	old := audit.Record{Incident: OldIncident, Node: NodeA}
	add(-30*time.Hour, with(old, audit.Detected, "Pending", "", "NvidiaXID119Error", "critical"))
	add(-30*time.Hour+time.Second, with(old, audit.Decided, "Pending", "CordonOnly", "xid-fatal", ""))
	add(-30*time.Hour+2*time.Minute, withDuration(with(old, audit.Failed, "Failed", "CordonOnly", "ProviderUnavailable", ""), 2*time.Minute))

	done := audit.Record{Incident: DoneIncident, Node: NodeA, GPUs: []string{"GPU-aaaa"}}
	add(-3*time.Hour, with(done, audit.Detected, "Pending", "", "NvidiaXID79Error", "critical"))
	add(-3*time.Hour+time.Second, with(done, audit.Decided, "Pending", "Reboot", "xid-79", ""))
	add(-3*time.Hour+2*time.Second, with(done, audit.Cordoned, "Draining", "Reboot", "", ""))
	ev := with(done, audit.Evicted, "Draining", "Reboot", "", "")
	ev.Pod = "team/worker-0"
	add(-3*time.Hour+time.Minute, ev)
	add(-3*time.Hour+2*time.Minute, withDuration(with(done, audit.Drained, "Rebooting", "Reboot", "", ""), 2*time.Minute))
	req := with(done, audit.ActionRequested, "Rebooting", "Reboot", "", "")
	req.Provider, req.RequestID = "aws", "req-42"
	add(-3*time.Hour+3*time.Minute, req)
	add(-3*time.Hour+11*time.Minute, with(done, audit.Recovered, "Verifying", "Reboot", "", ""))
	add(-3*time.Hour+12*time.Minute, with(done, audit.Uncordoned, "Succeeded", "Reboot", "", ""))
	add(-3*time.Hour+12*time.Minute, withDuration(with(done, audit.Succeeded, "Succeeded", "Reboot", "Healed", ""), 12*time.Minute))

	open := audit.Record{Incident: OpenIncident, Node: NodeB}
	add(-time.Hour, with(open, audit.Detected, "Pending", "", "NvidiaXID48Error", "critical"))
	add(-time.Hour+time.Second, with(open, audit.Decided, "Pending", "Replace", "xid-48", ""))
	add(-time.Hour+2*time.Second, with(open, audit.Cordoned, "Draining", "Replace", "", ""))
	blocked := with(open, audit.EvictionBlocked, "Draining", "Replace", "PodDisruptionBudget", "")
	blocked.Pod = "team/db-0"
	add(-time.Hour+time.Minute, blocked)
	return out
}

func with(r audit.Record, k audit.Kind, phase, action, reason, severity string) audit.Record {
	r.Kind, r.Phase, r.Action, r.Reason, r.Severity = k, phase, action, reason, severity
	r.Message = string(k) + " " + r.Incident
	r.GPUs = append([]string(nil), r.GPUs...)
	return r
}

func withDuration(r audit.Record, d time.Duration) audit.Record {
	r.Duration = d
	return r
}

// WriteSQLite creates a SQLite audit store at path holding Records(now) and
// closes it.
func WriteSQLite(t testing.TB, path string, now time.Time) {
	t.Helper()
	ctx := context.Background()
	s, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, Records(now)...); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}
