// Package fleetreporttest is a month of a small fleet's audit log, as the
// controller writes it, for the tests of the fleet report and its CLI.
//
// Machine uuid-b is a lemon that changed its name: two reboots as node
// gpu-b, then, re-imaged and back as gpu-e, a GPU reset. Counted by name
// no node reaches three hardware incidents; counted by machine it does.
// Node gpu-a is the other way round: three hardware incidents under one
// name, on two machines (uuid-a1 was replaced by uuid-a2 under the same
// name), so no lemon. gpu-d's records predate machine identities.
package fleetreporttest

import (
	"fmt"
	"time"

	"github.com/gpuheal/gpuheal/internal/audit"
)

// Now is the time the fixture is seen from.
var Now = time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)

// Day is 24 hours.
const Day = 24 * time.Hour

// The lemon's GPU reset and the GPUs of the fixture.
const (
	GPUb1 = "GPU-bbbbbbbb-0000-0000-0000-000000000001"
	GPUa1 = "GPU-aaaaaaaa-0000-0000-0000-000000000001"
)

// Spec is one incident of the fixture.
type Spec struct {
	ID, Node, Machine string
	Detected          time.Duration // before Now
	Reason            string        // Detected's
	Action            string
	Severity          string // the decision's
	GPUs              []string
	DryRun            bool
	// Outcome is the terminal kind after Lasted; "" leaves it open.
	Outcome audit.Kind
	Lasted  time.Duration
	// PartialDrain: a GPU reset that drained only the pods of GPUs.
	PartialDrain bool
}

// Specs are the fixture's incidents, oldest first.
func Specs() []Spec {
	return []Spec{
		{ID: "gpu-d-0001", Node: "gpu-d", Detected: 40 * Day, Reason: "NvidiaXID79Error", Action: "Reboot", Outcome: audit.Succeeded, Lasted: 10 * time.Minute},
		{ID: "gpu-b-0001", Node: "gpu-b", Machine: "uuid-b", Detected: 25 * Day, Reason: "NvidiaXID79Error", Action: "Reboot", Outcome: audit.Succeeded, Lasted: 15 * time.Minute},
		{ID: "gpu-a-0001", Node: "gpu-a", Machine: "uuid-a1", Detected: 20 * Day, Reason: "NvidiaXID79Error", Action: "Reboot", Outcome: audit.Succeeded, Lasted: 12 * time.Minute},
		{ID: "gpu-b-0002", Node: "gpu-b", Machine: "uuid-b", Detected: 12 * Day, Reason: "NvidiaXID79Error", Action: "Reboot", Outcome: audit.Succeeded, Lasted: 20 * time.Minute},
		{ID: "gpu-a-0002", Node: "gpu-a", Machine: "uuid-a1", Detected: 10 * Day, Reason: "NvidiaXID48Error", Action: "Replace", GPUs: []string{GPUa1}, Outcome: audit.Succeeded, Lasted: 40 * time.Minute},
		{ID: "gpu-c-0001", Node: "gpu-c", Machine: "uuid-c", Detected: 5 * Day, Reason: "NvidiaXID119Error", Action: "CordonOnly", Severity: "critical", Outcome: audit.Failed, Lasted: 2 * time.Hour},
		{ID: "gpu-e-0001", Node: "gpu-e", Machine: "uuid-b", Detected: 3 * Day, Reason: "NvidiaXID94Error", Action: "ResetGPU", GPUs: []string{GPUb1}, Outcome: audit.Succeeded, Lasted: 5 * time.Minute, PartialDrain: true},
		{ID: "gpu-a-0003", Node: "gpu-a", Machine: "uuid-a2", Detected: 2 * Day, Reason: "NvidiaXID79Error", Action: "Reboot", Outcome: audit.Succeeded, Lasted: 10 * time.Minute},
		{ID: "gpu-d-0002", Node: "gpu-d", Detected: Day, Reason: "NvidiaXID79Error", Action: "Reboot", DryRun: true, Outcome: audit.Cancelled, Lasted: 30 * time.Minute},
		{ID: "gpu-a-0004", Node: "gpu-a", Machine: "uuid-a2", Detected: Day - 2*time.Hour, Reason: "NvidiaXID13Error", Action: "Ignore", Severity: "warning", Outcome: audit.Succeeded, Lasted: time.Minute},
		{ID: "gpu-c-0002", Node: "gpu-c", Machine: "uuid-c", Detected: 6 * time.Hour, Reason: "NvidiaXID48Error", Action: "Replace"},
	}
}

// Records are the records of specs as the controller writes them, in the
// order of their times (the order a store assigns seq in).
func Records(specs []Spec) []audit.Record {
	var out []audit.Record
	for _, s := range specs {
		out = append(out, records(s)...)
	}
	// Incidents do not overlap in the fixture but for the open one, which
	// is the newest: records of one incident are contiguous and in order.
	return out
}

func records(s Spec) []audit.Record {
	t0 := Now.Add(-s.Detected)
	var out []audit.Record
	add := func(after time.Duration, k audit.Kind, phase string, edit func(*audit.Record)) {
		r := audit.Record{
			Key: audit.Key(s.ID, string(k), len(out)), Time: t0.Add(after), Incident: s.ID, Node: s.Node,
			Policy: "default", Kind: k, Phase: phase, Machine: s.Machine, DryRun: s.DryRun,
			GPUs: append([]string(nil), s.GPUs...), Message: fmt.Sprintf("%s %s", k, s.ID),
		}
		if k != audit.Detected {
			r.Action = s.Action
		}
		if edit != nil {
			edit(&r)
		}
		out = append(out, r)
	}
	add(0, audit.Detected, "Pending", func(r *audit.Record) { r.Reason, r.Severity = s.Reason, audit.SeverityCritical })
	add(time.Second, audit.Decided, "Pending", func(r *audit.Record) { r.Reason, r.Severity = "rule", s.Severity })
	switch {
	case s.DryRun:
		add(2*time.Second, audit.DryRun, "Pending", nil)
	case s.Action == "ResetGPU":
		reason := "WholeNodeDrain"
		if s.PartialDrain {
			reason = "PartialDrain"
		}
		add(2*time.Second, audit.DrainScoped, "Draining", func(r *audit.Record) { r.Reason = reason })
		add(time.Minute, audit.ResetRequested, "Resetting", nil)
		add(2*time.Minute, audit.ResetFinished, "Verifying", func(r *audit.Record) { r.Reason = "Succeeded" })
	case s.Action != "Ignore":
		add(2*time.Second, audit.Cordoned, "Cordoned", nil)
		add(time.Minute, audit.Drained, "Drained", func(r *audit.Record) { r.Duration = time.Minute })
	}
	if s.Outcome != "" {
		if s.Outcome == audit.Succeeded && s.Action != "Ignore" && !s.DryRun {
			add(s.Lasted-time.Second, audit.Recovered, "Verifying", nil)
		}
		add(s.Lasted, s.Outcome, string(s.Outcome), func(r *audit.Record) { r.Duration = s.Lasted })
	}
	return out
}

// Node is a node the cluster still has, as its labels say.
type Node struct {
	Name, InstanceType, Zone string
	GPUs                     int
}

// ClusterNodes are the fixture's nodes in the cluster at Now: gpu-b left
// (its machine came back as gpu-e) and gpu-d is gone.
func ClusterNodes() []Node {
	return []Node{
		{Name: "gpu-a", InstanceType: "p5.48xlarge", Zone: "us-east-1a", GPUs: 8},
		{Name: "gpu-c", InstanceType: "p4d.24xlarge", Zone: "us-east-1b", GPUs: 8},
		{Name: "gpu-e", InstanceType: "p5.48xlarge", Zone: "us-east-1b", GPUs: 8},
	}
}
