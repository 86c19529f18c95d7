// Package fleetreport is the fleet reliability report for people: from
// the audit log's records, incidents, mean time between incidents (MTBI),
// mean time to recover (MTTR) and GPU-hours lost per node, machine,
// instance type and zone; the lemons the controller's rule names, with
// their evidence; and a chart. Build is a pure function of the records,
// what is known of the nodes, the time and the options; the CLI reads the
// records and the nodes (docs/fleet-report.md).
package fleetreport

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/audit"
	"github.com/gpuheal/gpuheal/internal/history"
	"github.com/gpuheal/gpuheal/internal/score"
)

// Unknown stands for an instance type or zone that nothing says.
const Unknown = "unknown"

// NodeInfo is what the cluster says of a node, by name.
type NodeInfo struct {
	InstanceType string
	Zone         string
	// GPUs the node's hardware has; 0 when its labels do not say.
	GPUs int
}

// Options of a report.
type Options struct {
	// Since: incidents detected before it are left out of the counts (the
	// lemon rule still reads every record, over its own window). Zero: all.
	Since time.Time
	Lemon score.LemonRule
	// GPUsPerNode is the GPU count of a node the cluster says nothing of;
	// 0 leaves the GPU-hours of its whole-node incidents unknown.
	GPUsPerNode int
}

// Validate names every bad option.
func (o Options) Validate() error {
	var errs []error
	if err := o.Lemon.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("lemon rule: %w", err))
	}
	if o.GPUsPerNode < 0 {
		errs = append(errs, fmt.Errorf("GPUs per node %d: must not be negative", o.GPUsPerNode))
	}
	return errors.Join(errs...)
}

// Report is the report; its JSON is the stable machine-readable form
// (docs/fleet-report.md lists the fields).
type Report struct {
	Generated time.Time `json:"generated"`
	// Since is the start of the counted period; absent: all history.
	Since     *time.Time `json:"since,omitempty"`
	LemonRule LemonRule  `json:"lemonRule"`
	// NodeInfo says whether instance types and zones were read from the
	// cluster's Nodes ("cluster") or not ("none": all unknown).
	NodeInfo      string     `json:"nodeInfo"`
	Fleet         Group      `json:"fleet"`
	Nodes         []Group    `json:"nodes"`
	Machines      []Group    `json:"machines"`
	InstanceTypes []Group    `json:"instanceTypes"`
	Zones         []Group    `json:"zones"`
	Lemons        []Lemon    `json:"lemons"`
	PerDay        []Day      `json:"incidentsPerDay"`
	MTBI          []Bucket   `json:"mtbiDistribution"`
	Incidents     []Incident `json:"incidents"`
}

// LemonRule is the rule the lemons were found by.
type LemonRule struct {
	Incidents int `json:"incidents"`
	// Window in seconds, and as people write it (30d).
	WindowSeconds float64 `json:"windowSeconds"`
	Window        string  `json:"window"`
}

// Group is the figures of the incidents of one node, machine, instance
// type or zone (or the fleet).
type Group struct {
	Name      string `json:"name"`
	Incidents int    `json:"incidents"`
	// Hardware incidents are those the lemon rule counts (reset-gpu and
	// heavier).
	Hardware int `json:"hardware"`
	Open     int `json:"open"`
	// MTBISeconds is the mean gap between consecutive incidents; absent
	// with fewer than two.
	MTBISeconds *float64 `json:"mtbiSeconds,omitempty"`
	// MTTRSeconds is the mean time from Detected to the terminal record of
	// the ended incidents; absent when none ended.
	MTTRSeconds *float64 `json:"mttrSeconds,omitempty"`
	// GPUHoursLost sums the incidents whose GPU count is known; absent
	// when none is. GPUHoursUnknown counts the others.
	GPUHoursLost    *float64 `json:"gpuHoursLost,omitempty"`
	GPUHoursUnknown int      `json:"gpuHoursUnknown,omitempty"`
	// Nodes: a machine's node names; Machines: a node name's machines.
	Nodes    []string `json:"nodes,omitempty"`
	Machines []string `json:"machines,omitempty"`
}

// Lemon is a machine (or one GPU of it) the controller's rule retires,
// with the incidents that make it one.
type Lemon struct {
	Machine string `json:"machine"`
	GPU     string `json:"gpu,omitempty"`
	// Node is the name of its latest incident; Nodes every name in the
	// evidence.
	Node     string     `json:"node"`
	Nodes    []string   `json:"nodes"`
	Evidence []Evidence `json:"evidence"`
}

// Evidence is one incident behind a lemon.
type Evidence struct {
	Incident string    `json:"incident"`
	Time     time.Time `json:"time"`
	Node     string    `json:"node"`
	Class    string    `json:"class"`
	Action   string    `json:"action,omitempty"`
	Reason   string    `json:"reason,omitempty"`
	GPUs     []string  `json:"gpus,omitempty"`
}

// Day counts the incidents detected on one UTC day.
type Day struct {
	Day       string `json:"day"` // 2006-01-02
	Incidents int    `json:"incidents"`
	Hardware  int    `json:"hardware"`
}

// Bucket counts the gaps between consecutive incidents of one machine
// that fall in [Min, Max); MaxSeconds absent: no upper bound.
type Bucket struct {
	Label      string   `json:"label"`
	MinSeconds float64  `json:"minSeconds"`
	MaxSeconds *float64 `json:"maxSeconds,omitempty"`
	Count      int      `json:"count"`
}

// Incident is one incident of the period.
type Incident struct {
	ID           string     `json:"id"`
	Node         string     `json:"node"`
	Machine      string     `json:"machine"`
	InstanceType string     `json:"instanceType"`
	Zone         string     `json:"zone"`
	Detected     time.Time  `json:"detected"`
	Ended        *time.Time `json:"ended,omitempty"`
	// Outcome is Succeeded, Failed or Cancelled; absent while open.
	Outcome string `json:"outcome,omitempty"`
	Action  string `json:"action,omitempty"`
	// Class is the decision's class (docs/health-score.md); absent when no
	// decision was recorded.
	Class    string   `json:"class,omitempty"`
	Hardware bool     `json:"hardware"`
	Reason   string   `json:"reason,omitempty"`
	GPUs     []string `json:"gpus,omitempty"`
	DryRun   bool     `json:"dryRun,omitempty"`
	// RecoverSeconds: Detected to the terminal record; absent while open.
	RecoverSeconds *float64 `json:"recoverSeconds,omitempty"`
	// GPUsOut: GPUs out of service (the reset GPUs of a partial drain,
	// else the node's); 0 unknown. GPUHoursLost is GPUsOut times the time
	// to recover, or the time so far while open.
	GPUsOut      int      `json:"gpusOut,omitempty"`
	GPUHoursLost *float64 `json:"gpuHoursLost,omitempty"`
}

// Build makes the report of recs (in seq order) at now. nodes is what the
// cluster says of the nodes by name; nil when it was not asked, which
// makes every instance type and zone Unknown.
func Build(recs []audit.Record, nodes map[string]NodeInfo, now time.Time, o Options) (Report, error) {
	if err := o.Validate(); err != nil {
		return Report{}, err
	}
	now = now.UTC()
	r := Report{
		Generated: now,
		LemonRule: LemonRule{Incidents: o.Lemon.Incidents, WindowSeconds: o.Lemon.Window.Seconds(), Window: Human(o.Lemon.Window)},
		NodeInfo:  "none",
	}
	if nodes != nil {
		r.NodeInfo = "cluster"
	}
	if !o.Since.IsZero() {
		since := o.Since.UTC()
		r.Since = &since
	}
	all := incidentsOf(recs, nodes, now, o.GPUsPerNode)
	for _, in := range all {
		if o.Since.IsZero() || !in.Detected.Before(o.Since) {
			r.Incidents = append(r.Incidents, in)
		}
	}
	r.Incidents = nonNil(r.Incidents)
	r.Fleet = group("fleet", byFleet, r.Incidents)
	r.Nodes = groupBy(r.Incidents, byNode, func(in *Incident) string { return in.Node })
	r.Machines = groupBy(r.Incidents, byMachine, func(in *Incident) string { return in.Machine })
	r.InstanceTypes = groupBy(r.Incidents, byOther, func(in *Incident) string { return in.InstanceType })
	r.Zones = groupBy(r.Incidents, byOther, func(in *Incident) string { return in.Zone })
	r.Lemons = lemons(recs, all, now, o.Lemon)
	r.PerDay = perDay(r.Incidents, o.Since, now)
	r.MTBI = mtbiDistribution(r.Incidents)
	return r, nil
}

// Hardware says whether a decision's class is one the lemon rule counts:
// a GPU reset or heavier, never a workload's fault or a warning.
func Hardware(c score.Class) bool { return c >= score.ClassResetGPU }

// incidentsOf groups recs by incident, oldest detection first.
func incidentsOf(recs []audit.Record, nodes map[string]NodeInfo, now time.Time, gpusPerNode int) []Incident {
	type acc struct {
		in             Incident
		machine        string
		decided        bool
		wholeNodeDrain bool
		resetGPUs      []string
	}
	byID := map[string]*acc{}
	var order []*acc
	for i := range recs {
		rec := &recs[i]
		if rec.Incident == "" {
			continue
		}
		a := byID[rec.Incident]
		if a == nil {
			a = &acc{in: Incident{ID: rec.Incident, Node: rec.Node, Detected: rec.Time.UTC()}}
			byID[rec.Incident] = a
			order = append(order, a)
		}
		in := &a.in
		if rec.Machine != "" && (a.machine == "" || rec.Kind == audit.Decided) {
			a.machine = rec.Machine // the decision's, as the lemon rule reads it
		}
		if rec.Action != "" {
			in.Action = rec.Action
		}
		in.DryRun = in.DryRun || rec.DryRun
		switch rec.Kind {
		case audit.Detected:
			in.Node, in.Detected, in.Reason = rec.Node, rec.Time.UTC(), rec.Reason
			if len(in.GPUs) == 0 {
				in.GPUs = slices.Clone(rec.GPUs)
			}
		case audit.Decided:
			if !a.decided {
				a.decided = true
				in.Class = history.Class(rec).String()
				in.Hardware = Hardware(history.Class(rec))
				if len(rec.GPUs) > 0 {
					in.GPUs = slices.Clone(rec.GPUs)
				}
			}
		case audit.ResetRequested:
			a.resetGPUs = append(a.resetGPUs, rec.GPUs...)
		case audit.DrainScoped:
			a.wholeNodeDrain = a.wholeNodeDrain || rec.Reason == "WholeNodeDrain"
		case audit.Succeeded, audit.Failed, audit.Cancelled:
			if in.Ended == nil {
				end := rec.Time.UTC()
				in.Ended, in.Outcome = &end, string(rec.Kind)
			}
		}
		if in.Reason == "" && rec.Reason != "" && rec.Kind != audit.Decided {
			in.Reason = rec.Reason
		}
	}
	out := make([]Incident, 0, len(order))
	for _, a := range order {
		in := a.in
		in.Machine = cmp.Or(a.machine, "node/"+in.Node) // score.Incident's fallback
		info, known := nodes[in.Node]
		in.InstanceType, in.Zone = cmp.Or(info.InstanceType, Unknown), cmp.Or(info.Zone, Unknown)
		end := now
		if in.Ended != nil {
			end = *in.Ended
			s := max(end.Sub(in.Detected), 0).Seconds()
			in.RecoverSeconds = &s
		}
		switch {
		case in.Action == string(v1alpha1.ActionResetGPU) && !a.wholeNodeDrain && len(a.resetGPUs) > 0:
			in.GPUsOut = len(uniq(a.resetGPUs))
		case known && info.GPUs > 0:
			in.GPUsOut = info.GPUs
		default:
			in.GPUsOut = gpusPerNode
		}
		if in.GPUsOut > 0 {
			h := float64(in.GPUsOut) * max(end.Sub(in.Detected), 0).Hours()
			in.GPUHoursLost = &h
		}
		out = append(out, in)
	}
	slices.SortStableFunc(out, func(a, b Incident) int {
		return cmp.Or(a.Detected.Compare(b.Detected), cmp.Compare(a.ID, b.ID))
	})
	return out
}

func groupBy(ins []Incident, by int, key func(*Incident) string) []Group {
	byKey := map[string][]Incident{}
	for i := range ins {
		k := key(&ins[i])
		byKey[k] = append(byKey[k], ins[i])
	}
	out := make([]Group, 0, len(byKey))
	for k, g := range byKey {
		out = append(out, group(k, by, g))
	}
	slices.SortFunc(out, func(a, b Group) int {
		return cmp.Or(cmp.Compare(b.Incidents, a.Incidents), cmp.Compare(b.Hardware, a.Hardware), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// What a group is of.
const (
	byFleet = iota
	byNode
	byMachine
	byOther
)

// group sums ins, oldest first.
func group(name string, by int, ins []Incident) Group {
	g := Group{Name: name, Incidents: len(ins)}
	var recovering, lost float64
	ended, known := 0, 0
	nodes, machines := map[string]bool{}, map[string]bool{}
	for i := range ins {
		in := &ins[i]
		nodes[in.Node], machines[in.Machine] = true, true
		if in.Hardware {
			g.Hardware++
		}
		if in.RecoverSeconds == nil {
			g.Open++
		} else {
			ended++
			recovering += *in.RecoverSeconds
		}
		if in.GPUHoursLost == nil {
			g.GPUHoursUnknown++
		} else {
			known++
			lost += *in.GPUHoursLost
		}
	}
	if n := len(ins); n >= 2 {
		m := ins[n-1].Detected.Sub(ins[0].Detected).Seconds() / float64(n-1)
		g.MTBISeconds = &m
	}
	if ended > 0 {
		m := recovering / float64(ended)
		g.MTTRSeconds = &m
	}
	if known > 0 {
		g.GPUHoursLost = &lost
	}
	// A node row names its machines when several carried the name, a
	// machine row its names when it had several: machine-versus-name
	// counting at a glance.
	switch {
	case by == byNode && len(machines) > 1:
		g.Machines = sortedKeys(machines)
	case by == byMachine && len(nodes) > 1:
		g.Nodes = sortedKeys(nodes)
	}
	return g
}

// lemons runs the controller's rule over every decision in recs (not only
// the period's), with each incident's action and reason as evidence.
func lemons(recs []audit.Record, ins []Incident, now time.Time, rule score.LemonRule) []Lemon {
	byID := map[string]*Incident{}
	for i := range ins {
		byID[ins[i].ID] = &ins[i]
	}
	found := rule.Find(history.Incidents(recs), now)
	out := make([]Lemon, 0, len(found))
	for _, l := range found {
		lem := Lemon{Machine: l.Machine, GPU: l.GPU, Node: l.Node}
		names := map[string]bool{}
		for _, e := range l.Incidents {
			ev := Evidence{Incident: e.ID, Time: e.Time.UTC(), Node: e.Node, Class: e.Class.String(), GPUs: e.GPUs}
			if in := byID[e.ID]; in != nil {
				ev.Action, ev.Reason = in.Action, in.Reason
			}
			names[e.Node] = true
			lem.Evidence = append(lem.Evidence, ev)
		}
		lem.Nodes = sortedKeys(names)
		out = append(out, lem)
	}
	return out
}

// perDay counts incidents per UTC day from since's day (the first
// incident's when since is zero) to now's.
func perDay(ins []Incident, since, now time.Time) []Day {
	start := since
	if start.IsZero() {
		if len(ins) == 0 {
			return []Day{}
		}
		start = ins[0].Detected
	}
	first, last := day(start), day(now)
	if len(ins) > 0 && day(ins[len(ins)-1].Detected).After(last) {
		last = day(ins[len(ins)-1].Detected) // a writer's clock ahead of ours
	}
	out := []Day{}
	index := map[time.Time]int{}
	for d := first; !d.After(last); d = d.AddDate(0, 0, 1) {
		index[d] = len(out)
		out = append(out, Day{Day: d.Format(time.DateOnly)})
	}
	for i := range ins {
		if j, ok := index[day(ins[i].Detected)]; ok {
			out[j].Incidents++
			if ins[i].Hardware {
				out[j].Hardware++
			}
		}
	}
	return out
}

func day(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// mtbiBounds are the buckets' lower bounds; the last has no upper one.
var mtbiBounds = []struct {
	label string
	min   time.Duration
}{
	{"<1h", 0},
	{"1h–6h", time.Hour},
	{"6h–1d", 6 * time.Hour},
	{"1d–3d", 24 * time.Hour},
	{"3d–7d", 3 * 24 * time.Hour},
	{"7d–30d", 7 * 24 * time.Hour},
	{"≥30d", 30 * 24 * time.Hour},
}

// mtbiDistribution counts the gaps between consecutive incidents of each
// machine: what each MTBI of the machines' table is the mean of.
func mtbiDistribution(ins []Incident) []Bucket {
	out := make([]Bucket, len(mtbiBounds))
	for i, b := range mtbiBounds {
		out[i] = Bucket{Label: b.label, MinSeconds: b.min.Seconds()}
		if i+1 < len(mtbiBounds) {
			m := mtbiBounds[i+1].min.Seconds()
			out[i].MaxSeconds = &m
		}
	}
	last := map[string]time.Time{}
	for i := range ins { // oldest first
		in := &ins[i]
		if prev, ok := last[in.Machine]; ok {
			gap := in.Detected.Sub(prev)
			j := len(mtbiBounds) - 1
			for j > 0 && gap < mtbiBounds[j].min {
				j--
			}
			out[j].Count++
		}
		last[in.Machine] = in.Detected
	}
	return out
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func uniq(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return slices.Compact(s)
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// Human writes d as people read it: 2d3h, 14m, 45s (two units at most).
func Human(d time.Duration) string {
	if d < 0 {
		return "-" + Human(-d)
	}
	if d < time.Minute {
		return d.Round(time.Second).String()
	}
	units := []struct {
		name string
		d    time.Duration
	}{{"d", 24 * time.Hour}, {"h", time.Hour}, {"m", time.Minute}, {"s", time.Second}}
	d = d.Round(time.Second)
	out := ""
	parts := 0
	for _, u := range units {
		if n := d / u.d; n > 0 || parts > 0 {
			if n > 0 {
				out += fmt.Sprintf("%d%s", n, u.name)
			}
			d -= n * u.d
			if parts++; parts == 2 {
				break
			}
		}
	}
	return out
}

// Seconds is a figure in seconds as Human writes it, "-" when absent.
func Seconds(s *float64) string {
	if s == nil {
		return "-"
	}
	return Human(time.Duration(*s * float64(time.Second)))
}
