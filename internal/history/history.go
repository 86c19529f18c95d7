// Package history reads a fleet's incident history from the audit log:
// one score.Incident per remediation decision. The controller's lemon
// rule and `gpuheal fleet report` read the same history this way, so a
// lemon in the report is one the controller would retire.
package history

import (
	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/audit"
	"github.com/gpuheal/gpuheal/internal/score"
)

// Incidents are the Decided records of recs, in their order: each
// incident's decision carries its node, machine, GPUs, action and
// severity. Dry-run decisions changed nothing and count too: the hardware
// failed all the same.
func Incidents(recs []audit.Record) []score.Incident {
	var out []score.Incident
	for i := range recs {
		if in, ok := Incident(&recs[i]); ok {
			out = append(out, in)
		}
	}
	return out
}

// Incident is r as an incident, when r is a decision.
func Incident(r *audit.Record) (score.Incident, bool) {
	if r.Kind != audit.Decided {
		return score.Incident{}, false
	}
	return score.Incident{ID: r.Incident, Time: r.Time, Machine: r.Machine, Node: r.Node, GPUs: r.GPUs,
		Class: Class(r)}, true
}

// Class is how much a decision weighs: by its action, or its severity
// when the action says nothing of the hardware; an ignored finding (an
// application's Xid) is the application's.
func Class(r *audit.Record) score.Class {
	if r.Action == string(v1alpha1.ActionIgnore) {
		return score.ClassRestartApp
	}
	return score.ClassFor(r.Action, r.Severity)
}
