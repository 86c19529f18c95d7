package score

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// LemonRule names a repeat offender: a machine, or one GPU of it, behind
// at least Incidents hardware incidents within Window. Meta's research
// clusters found a few such "lemon" nodes behind a large share of job
// failures, and retiring them paid off (docs/health-score.md); another
// reboot does not cure a board that keeps failing.
//
// Incidents are counted by machine identity (the node's system UUID or
// cloud instance) and by GPU UUID, not by node name: a rebooted node keeps
// its board and its history, a replacement is new hardware, and an
// on-premises replacement may come back under the old name.
type LemonRule struct {
	Incidents int
	Window    time.Duration
}

// DefaultLemonRule: a third hardware incident within 30 days.
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
	// GPU is the UUID when one GPU is the repeat offender, "" when the
	// machine's incidents are (a GPU's always count for its machine too).
	GPU string
	// Node is the name of the machine's latest incident.
	Node string
	// Incidents are the evidence within the window, oldest first.
	Incidents []Incident
}

// Check says whether next, a new incident, makes its machine or one of
// its GPUs a lemon given the earlier history. The machine wins over a GPU:
// the whole board is the offender then.
func (r LemonRule) Check(history []Incident, next Incident) (Lemon, bool) {
	if r.Incidents < 2 || !next.hardware() {
		return Lemon{}, false
	}
	from := next.Time.Add(-r.Window)
	var onMachine []Incident
	onGPU := map[string][]Incident{}
	for _, in := range history {
		if !in.hardware() || in.Time.Before(from) || in.Time.After(next.Time) || in.ID == next.ID ||
			in.machine() != next.machine() && !sharesGPU(in.GPUs, next.GPUs) {
			continue
		}
		if in.machine() == next.machine() {
			onMachine = append(onMachine, in)
		}
		for _, g := range in.GPUs {
			if slices.Contains(next.GPUs, g) {
				onGPU[g] = append(onGPU[g], in)
			}
		}
	}
	if len(onMachine)+1 >= r.Incidents {
		return lemon(next, "", onMachine), true
	}
	for _, g := range next.GPUs {
		if len(onGPU[g])+1 >= r.Incidents {
			return lemon(next, g, onGPU[g]), true
		}
	}
	return Lemon{}, false
}

func lemon(next Incident, gpu string, earlier []Incident) Lemon {
	ev := append(slices.Clone(earlier), next)
	slices.SortStableFunc(ev, func(a, b Incident) int { return a.Time.Compare(b.Time) })
	return Lemon{Machine: next.machine(), GPU: gpu, Node: next.Node, Incidents: ev}
}

func sharesGPU(a, b []string) bool {
	for _, g := range a {
		if slices.Contains(b, g) {
			return true
		}
	}
	return false
}

// Find lists every machine that is a lemon at now: its hardware incidents
// within the window ending at now reach the rule's count, or one GPU's do.
// Sorted by machine; one entry per machine, a machine-wide one when both.
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
	for m, ins := range byMachine {
		slices.SortStableFunc(ins, func(a, b Incident) int { return a.Time.Compare(b.Time) })
		last := ins[len(ins)-1]
		if len(ins) >= r.Incidents {
			out = append(out, Lemon{Machine: m, Node: last.Node, Incidents: ins})
			continue
		}
		if l, ok := worstGPU(ins, r.Incidents); ok {
			l.Machine, l.Node = m, last.Node
			out = append(out, l)
		}
	}
	slices.SortFunc(out, func(a, b Lemon) int {
		switch {
		case a.Machine < b.Machine:
			return -1
		case a.Machine > b.Machine:
			return 1
		}
		return 0
	})
	return out
}

// worstGPU is the GPU of one machine's incidents with the most of them,
// when that reaches n (ties: the smallest UUID, for a stable answer).
func worstGPU(ins []Incident, n int) (Lemon, bool) {
	byGPU := map[string][]Incident{}
	for _, in := range ins {
		for _, g := range in.GPUs {
			byGPU[g] = append(byGPU[g], in)
		}
	}
	best := ""
	for g, gi := range byGPU {
		if len(gi) >= n && (best == "" || len(gi) > len(byGPU[best]) || len(gi) == len(byGPU[best]) && g < best) {
			best = g
		}
	}
	if best == "" {
		return Lemon{}, false
	}
	return Lemon{GPU: best, Incidents: byGPU[best]}, true
}
