package analyzer

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/gpuheal/gpuheal/internal/finding"
)

// GPURef names the GPU a problem is about.
type GPURef struct {
	// Index is -1 for a GPU a finding named that the snapshot lacks.
	Index    int
	UUID     string
	PCIBusID string
	Name     string
}

// Problem is one active problem.
type Problem struct {
	Rule string
	// GPU is nil for a node-level problem.
	GPU *GPURef
	// Port is the RDMA port of a port-scope problem, else nil.
	Port *PortRef
	// Code is the finding's code for finding rules ("XID79"), else "".
	Code      string
	Severity  finding.Severity
	Condition string
	Reason    string
	Message   string
	Action    finding.Action
	// Since is when the problem became active (a finding's own time for
	// finding rules).
	Since   time.Time
	Latched bool
	Value   any
}

// Condition status values, as Kubernetes spells them.
const (
	StatusTrue  = "True"
	StatusFalse = "False"
)

// ConditionStatus is what one node condition should say. Only fatal
// problems make a condition False; warnings are for Events, and keeping
// them out of the condition spares the API server a patch whenever a
// warning comes or goes.
type ConditionStatus struct {
	Type   string
	Status string
	// Reason, Message and Action are the worst fatal problem's (fatal >
	// warning, then the heavier action, then the older problem); Message
	// counts the others.
	Reason  string
	Message string
	Action  finding.Action
	// LastTransitionTime changes only when Status flips: a second problem
	// on an already unhealthy node changes Reason and Message, never this.
	LastTransitionTime time.Time
}

// RuleError is an evaluation failure of one rule (a missing key without
// has(), a type mismatch). The rule counts as not holding.
type RuleError struct {
	Rule string
	GPU  *GPURef
	Err  error
}

func (e *RuleError) Error() string {
	if e.GPU != nil {
		return fmt.Sprintf("rule %s: GPU %d (%s): %v", e.Rule, e.GPU.Index, e.GPU.PCIBusID, e.Err)
	}
	return fmt.Sprintf("rule %s: %v", e.Rule, e.Err)
}

func (e *RuleError) Unwrap() error { return e.Err }

// Result is one evaluation's outcome.
type Result struct {
	Time time.Time
	// Problems are the active problems, worst first.
	Problems []Problem
	// Conditions has one entry per condition type the rule set uses,
	// sorted by type.
	Conditions []ConditionStatus
	Errors     []error
}

// Condition returns the status of condition type t, if reported.
func (r Result) Condition(t string) (ConditionStatus, bool) {
	for _, c := range r.Conditions {
		if c.Type == t {
			return c, true
		}
	}
	return ConditionStatus{}, false
}

type condState struct {
	status string
	since  time.Time
}

// worse orders problems worst first; the tail keys make the order (and so
// the condition's reason) deterministic.
func worse(a, b *Problem) int {
	return cmp.Or(
		cmp.Compare(b.Severity.Rank(), a.Severity.Rank()),
		cmp.Compare(b.Action.Rank(), a.Action.Rank()),
		a.Since.Compare(b.Since),
		cmp.Compare(a.Rule, b.Rule),
		cmp.Compare(gpuIndex(a.GPU), gpuIndex(b.GPU)),
		cmp.Compare(a.Code, b.Code),
	)
}

func gpuIndex(g *GPURef) int {
	if g == nil {
		return -2
	}
	return g.Index
}

func (e *Engine) collect(res *Result) {
	types := map[string]bool{}
	for _, r := range e.rs.Rules {
		types[r.Condition] = true
		for _, s := range e.rules[r.Name].probs {
			if !s.active {
				continue
			}
			var g *GPURef
			if s.gpu != nil {
				c := *s.gpu // callers may keep or change it
				g = &c
			}
			var port *PortRef
			if s.port != nil {
				c := *s.port
				port = &c
			}
			res.Problems = append(res.Problems, Problem{
				Rule: r.Name, GPU: g, Port: port, Code: s.code, Severity: r.Severity, Condition: r.Condition,
				Reason: s.reason, Message: s.message, Action: s.action, Since: s.since, Latched: s.latched, Value: s.value,
			})
		}
	}
	slices.SortFunc(res.Problems, func(a, b Problem) int { return worse(&a, &b) })
	for _, t := range slices.Sorted(maps.Keys(types)) {
		c := ConditionStatus{Type: t, Status: StatusTrue, Reason: ReadyReason(t), Message: "gpuheal found no fatal problem", Action: finding.ActionNone}
		var worst *Problem
		n := 0
		for i := range res.Problems {
			p := &res.Problems[i]
			if p.Condition == t && p.Severity == finding.Fatal {
				if worst == nil {
					worst = p
				}
				n++
			}
		}
		if worst != nil {
			c.Status, c.Reason, c.Message, c.Action = StatusFalse, worst.Reason, worst.Message, worst.Action
			if n > 1 {
				c.Message += fmt.Sprintf(" (and %d more fatal problems)", n-1)
			}
		}
		cs := e.conds[t]
		if cs == nil || cs.status != c.Status {
			cs = &condState{status: c.Status, since: res.Time}
			e.conds[t] = cs
		}
		c.LastTransitionTime = cs.since
		res.Conditions = append(res.Conditions, c)
	}
}

// ReadyReason is the reason of a True condition: AcceleratedHardwareReady
// → AcceleratedHardwareIsReady, GPUHealAcceleratorHealthy →
// GPUHealAcceleratorIsHealthy.
func ReadyReason(t string) string {
	if s, ok := strings.CutSuffix(t, "Healthy"); ok {
		return s + "IsHealthy"
	}
	return strings.TrimSuffix(t, "Ready") + "IsReady"
}
