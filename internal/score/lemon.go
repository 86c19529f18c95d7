package score

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// LemonRule names a repeat offender: a machine behind at least Incidents
// hardware incidents within Window. Meta's research
// clusters found a few such "lemon" nodes behind a large share of job
// failures, and retiring them paid off (docs/health-score.md); another
// reboot does not cure a board that keeps failing.
//
// Incidents are counted by machine identity (the node's system UUID or
// cloud instance), not by node name: a
// rebooted node keeps its board and its history, a replacement is new
// hardware, and an on-premises replacement may come back under the old
// name. A GPU's count stays within its machine because a UUID the agent
// could not read is no identity to carry across machines.
type LemonRule struct {
	Incidents int
	Window    time.Duration
}

// DefaultLemonRule retires a machine at its third hardware incident within 30 days.
func DefaultLemonRule() LemonRule { return LemonRule{Incidents: 3, Window: 30 * 24 * time.Hour} }

// Validate reports a rule that would retire every node or none.
func (r LemonRule) Validate() error {
	var errs []error
	if r.Incidents < 2 {
		errs = append(errs, fmt.Errorf("incidents %d: a lemon needs at least 2 (a repeat)", r.Incidents))
	}
	if r.Window <= 0 {
		errs = append(errs, fmt.Errorf("window %s: must be positive", r.Window))
	}
	return errors.Join(errs...)
}

// Incident is one remediation decision as the lemon rule sees it.
type Incident struct {
	ID   string // the NodeRemediation's name
	Time time.Time
	// Machine identifies the hardware; "" (an audit log older than the
	// field) falls back to Node, the best that history knows.
	Machine string
	Node    string
	GPUs    []string // UUIDs the agent named
	Class   Class
}

// hardware: only repairs of hardware count; a workload's crash loop or a
// warning does not make a lemon.
func (in *Incident) hardware() bool { return in.Class >= ClassResetGPU }

func (in *Incident) machine() string {
	if in.Machine != "" {
		return in.Machine
	}
	return "node/" + in.Node
}

// Lemon is a repeat offender with its evidence.
type Lemon struct {
	Machine string
	// GPU is the UUID every incident of the evidence named, when they all
	// named one: a single GPU behind them (the part to send back), "" when
	// the incidents are the machine's.
	GPU string
	// Node is the name of the machine's latest incident.
	Node string
	// Incidents are the evidence within the window, oldest first.
	Incidents []Incident
}

// Check says whether next, a new incident, makes its machine a lemon
// given the earlier history.
func (r LemonRule) Check(history []Incident, next Incident) (Lemon, bool) {
	if r.Incidents < 2 || !next.hardware() {
		return Lemon{}, false
	}
	from := next.Time.Add(-r.Window)
	ev := []Incident{next}
	for _, in := range history {
		if in.hardware() && !in.Time.Before(from) && !in.Time.After(next.Time) && in.ID != next.ID &&
			in.machine() == next.machine() {
			ev = append(ev, in)
		}
	}
	if len(ev) < r.Incidents {
		return Lemon{}, false
	}
	return newLemon(ev), true
}

// Find lists every machine that is a lemon at now: its hardware incidents
// within the window ending at now reach the rule's count. Sorted by
// machine.
func (r LemonRule) Find(history []Incident, now time.Time) []Lemon {
	if r.Incidents < 2 {
		return nil
	}
	from := now.Add(-r.Window)
	byMachine := map[string][]Incident{}
	for _, in := range history {
		if in.hardware() && !in.Time.Before(from) && !in.Time.After(now) {
			byMachine[in.machine()] = append(byMachine[in.machine()], in)
		}
	}
	var out []Lemon
	for _, ins := range byMachine {
		if len(ins) >= r.Incidents {
			out = append(out, newLemon(ins))
		}
	}
	slices.SortFunc(out, func(a, b Lemon) int { return strings.Compare(a.Machine, b.Machine) })
	return out
}

// newLemon orders the evidence and names the one GPU all of it shares.
func newLemon(ev []Incident) Lemon {
	ev = slices.Clone(ev)
	slices.SortStableFunc(ev, func(a, b Incident) int { return a.Time.Compare(b.Time) })
	last := ev[len(ev)-1]
	l := Lemon{Machine: last.machine(), Node: last.Node, Incidents: ev}
	if len(ev[0].GPUs) == 1 {
		g := ev[0].GPUs[0]
		if !slices.ContainsFunc(ev, func(in Incident) bool { return len(in.GPUs) != 1 || in.GPUs[0] != g }) {
			l.GPU = g
		}
	}
	return l
}
