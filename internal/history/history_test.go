package history

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuheal/gpuheal/internal/audit"
	"github.com/gpuheal/gpuheal/internal/score"
)

func TestIncidentsAreTheDecisions(t *testing.T) {
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	recs := []audit.Record{
		{Kind: audit.Detected, Incident: "a", Node: "n1", Time: at},
		{Kind: audit.Decided, Incident: "a", Node: "n1", Machine: "m1", Action: "Reboot", Severity: "critical", Time: at, GPUs: []string{"GPU-1"}},
		{Kind: audit.Decided, Incident: "b", Node: "n1", Action: "ResetGPU", Severity: "critical", Time: at.Add(time.Hour)},
		{Kind: audit.Decided, Incident: "c", Node: "n2", Action: "Ignore", Severity: "warning", Time: at.Add(2 * time.Hour)},
		{Kind: audit.Decided, Incident: "d", Node: "n2", Action: "CordonOnly", Severity: "critical", Time: at.Add(3 * time.Hour)},
		{Kind: audit.Succeeded, Incident: "a", Node: "n1", Time: at.Add(time.Minute)},
	}
	want := []score.Incident{
		{ID: "a", Time: at, Machine: "m1", Node: "n1", GPUs: []string{"GPU-1"}, Class: score.ClassReboot},
		{ID: "b", Time: at.Add(time.Hour), Node: "n1", Class: score.ClassResetGPU},
		{ID: "c", Time: at.Add(2 * time.Hour), Node: "n2", Class: score.ClassRestartApp},
		{ID: "d", Time: at.Add(3 * time.Hour), Node: "n2", Class: score.ClassFatal},
	}
	if diff := cmp.Diff(want, Incidents(recs)); diff != "" {
		t.Errorf("incidents (-want +got):\n%s", diff)
	}
}
