// Package diagnose turns findings from a saved kernel log, a Fabric
// Manager log and an nvidia-smi dump into a triage report: repeated findings grouped, worst
// first, with an exit status a script can act on.
package diagnose

import (
	"cmp"
	"slices"
	"time"

	"github.com/gpuheal/gpuheal/internal/finding"
	"github.com/gpuheal/gpuheal/internal/gpu"
)

// Exit statuses of `gpuheal diagnose`.
const (
	ExitClean      = 0 // nothing above info
	ExitWarning    = 1
	ExitFatal      = 2
	ExitUnreadable = 4
)

// Group is every finding of one code on one GPU, one fabric device (an
// adapter, a switch) or the node.
type Group struct {
	Source   string           `json:"source"`
	Code     string           `json:"code"`
	Xid      uint64           `json:"xid,omitempty"`
	GPU      string           `json:"gpu,omitempty"`
	Device   string           `json:"device,omitempty"`
	Severity finding.Severity `json:"severity"`
	Action   finding.Action   `json:"action"`
	Count    int              `json:"count"`
	First    time.Time        `json:"first,omitzero"`
	Last     time.Time        `json:"last,omitzero"`
	// Message is the first occurrence's text: later ones usually repeat
	// it, and the first is the one that explains what started it.
	Message string `json:"message"`
}

// InputStats says how much of the input was usable.
type InputStats struct {
	File        string `json:"file"`
	Lines       int    `json:"lines"`
	Records     int    `json:"records"`
	Skipped     int    `json:"skipped"`
	TooLong     int    `json:"tooLong"`
	InvalidUTF8 int    `json:"invalidUtf8"`
}

// Report is the result of a diagnosis.
type Report struct {
	Findings []Group           `json:"findings"`
	GPUs     []gpu.GPUSnapshot `json:"gpus,omitempty"`
	Node     *NodeSummary      `json:"node,omitempty"`
	Inputs   []InputStats      `json:"inputs,omitempty"`
	index    map[groupKey]int
}

// NodeSummary is the node-level part of an nvidia-smi dump.
type NodeSummary struct {
	DriverVersion     string `json:"driverVersion,omitempty"`
	CUDADriverVersion string `json:"cudaDriverVersion,omitempty"`
	FoundGPUs         int    `json:"foundGPUs"`
}

type groupKey struct{ source, code, gpu, device string }

// Add folds f into its group: the count grows, the time span widens, and
// the group keeps the worst severity and heaviest action seen (a count
// threshold can escalate later occurrences of the same Xid).
func (r *Report) Add(f finding.Finding) {
	if r.index == nil {
		r.index = map[groupKey]int{}
	}
	k := groupKey{f.Source, f.Code, f.GPU, f.Device}
	i, ok := r.index[k]
	if !ok {
		r.index[k] = len(r.Findings)
		r.Findings = append(r.Findings, Group{
			Source: f.Source, Code: f.Code, Xid: f.Xid, GPU: f.GPU, Device: f.Device, Severity: f.Severity, Action: f.Action,
			Count: 1, First: f.Time, Last: f.Time, Message: f.Message,
		})
		return
	}
	g := &r.Findings[i]
	g.Count++
	if f.Severity.Rank() > g.Severity.Rank() {
		g.Severity = f.Severity
	}
	if f.Action.Rank() > g.Action.Rank() {
		g.Action = f.Action
	}
	if !f.Time.IsZero() && (g.First.IsZero() || f.Time.Before(g.First)) {
		g.First = f.Time
	}
	if f.Time.After(g.Last) {
		g.Last = f.Time
	}
}

// Sort orders the groups worst first: severity, then action, then count.
func (r *Report) Sort() {
	slices.SortStableFunc(r.Findings, func(a, b Group) int {
		return cmp.Or(
			cmp.Compare(b.Severity.Rank(), a.Severity.Rank()),
			cmp.Compare(b.Action.Rank(), a.Action.Rank()),
			cmp.Compare(b.Count, a.Count),
			cmp.Compare(a.Code, b.Code),
			cmp.Compare(a.GPU, b.GPU),
			cmp.Compare(a.Device, b.Device),
		)
	})
	r.index = nil // positions changed; Add rebuilds it
	for i, g := range r.Findings {
		if r.index == nil {
			r.index = map[groupKey]int{}
		}
		r.index[groupKey{g.Source, g.Code, g.GPU, g.Device}] = i
	}
}

// ExitCode is 2 with any fatal finding, 1 with warnings (or findings of
// unknown severity: an Xid no catalog knows deserves a look), else 0.
func (r *Report) ExitCode() int {
	worst := 0
	for _, g := range r.Findings {
		switch g.Severity {
		case finding.Fatal:
			return ExitFatal
		case finding.Warning, finding.Unknown:
			worst = ExitWarning
		}
	}
	return worst
}
