package promsource

import (
	"slices"
	"strings"
	"time"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/audit"
	"github.com/gpuheal/gpuheal/internal/predict/trace"
)

// DefaultIgnoredReasons are Detected reasons that say the node's software
// or configuration is wrong, not that a GPU failed: no telemetry of the
// GPU could foretell them.
var DefaultIgnoredReasons = []string{"NvidiaDriverMismatch", "NvidiaDriverVersionUnexpected", "NvidiaFabricManagerDown"}

// aliveSlack: a node-wide failure falls on the node's GPUs that reported
// at most this long before it (a node that died outright stops reporting
// a little before its condition is seen).
const aliveSlack = 30 * time.Minute

// LabelOptions control labelling.
type LabelOptions struct {
	// IgnoreReasons are Detected reasons that are not GPU failures
	// (DefaultIgnoredReasons when nil).
	IgnoreReasons []string
	// End: an incident with no end in the log is taken to last until then.
	End time.Time
}

// LabelReport says what labelling found.
type LabelReport struct {
	// Incidents: Detected records read; Failures: labels made, one per
	// GPU; NodeWide: incidents that named no GPU and so fell on every GPU
	// of their node.
	Incidents, Failures, NodeWide int
	// Merged: labels that fell inside an earlier failure of the same GPU,
	// before its repair, and were joined to it.
	Merged int
	// Ignored incidents by condition or reason.
	Ignored map[string]int
	// Unmatched incidents (by name) on GPUs or nodes without telemetry.
	Unmatched []string
}

// Label makes failure labels from audit records (any order; only
// Detected and incident-ending records are read) for the slots.
func Label(recs []audit.Record, slots []Slot, o LabelOptions) ([]trace.Failure, LabelReport) {
	ignore := o.IgnoreReasons
	if ignore == nil {
		ignore = DefaultIgnoredReasons
	}
	rep := LabelReport{Ignored: map[string]int{}}
	ends := incidentEnds(recs)
	var out []trace.Failure
	for i := range recs {
		r := &recs[i]
		if r.Kind != audit.Detected {
			continue
		}
		rep.Incidents++
		cond, since, ok := parseDetected(r.Message)
		switch {
		// The agent's other condition (either name): a kernel problem is not a GPU failure.
		case v1alpha1.IsAgentKernelCondition(cond):
			rep.Ignored[cond]++
			continue
		case slices.Contains(ignore, r.Reason):
			rep.Ignored[r.Reason]++
			continue
		}
		at := r.Time
		if ok && !since.After(r.Time) {
			at = since
		}
		end, ok := ends[r.Incident]
		if !ok || r.Incident == "" {
			end = o.End
		}
		end = maxTime(end, at)
		hit := matchSlots(slots, r, at, end)
		if len(hit) == 0 {
			rep.Unmatched = append(rep.Unmatched, r.Incident)
			continue
		}
		if len(r.GPUs) == 0 {
			rep.NodeWide++
		}
		class := r.Reason
		if class == "" {
			class = "Unknown"
		}
		for _, s := range hit {
			out = append(out, trace.Failure{GPU: s.GPU, Time: at.UTC(), RepairedAt: end.UTC(), Class: class})
		}
	}
	out, rep.Merged = mergeOutages(out)
	rep.Failures = len(out)
	return out, rep
}

// incidentEnds is when each incident's GPU came back: its Recovered
// record, else the record that ended it.
func incidentEnds(recs []audit.Record) map[string]time.Time {
	ends := map[string]time.Time{}
	recovered := map[string]bool{}
	for _, r := range recs {
		switch r.Kind {
		case audit.Recovered:
			if !recovered[r.Incident] {
				ends[r.Incident], recovered[r.Incident] = r.Time, true
			}
		case audit.Succeeded, audit.Failed, audit.Cancelled:
			if _, ok := ends[r.Incident]; !ok {
				ends[r.Incident] = r.Time
			}
		}
	}
	return ends
}

// matchSlots finds the GPUs a Detected record concerns that reported
// during [at-aliveSlack, end]: those it names by UUID (on its node if the
// node label matches, anywhere otherwise), or all of its node's.
func matchSlots(slots []Slot, r *audit.Record, at, end time.Time) []Slot {
	alive := func(s *Slot) bool { return !s.First.After(end) && !s.Last.Before(at.Add(-aliveSlack)) }
	var hit []Slot
	if len(r.GPUs) == 0 {
		for i := range slots {
			if slots[i].Node == r.Node && alive(&slots[i]) {
				hit = append(hit, slots[i])
			}
		}
		return hit
	}
	for _, uuid := range r.GPUs {
		var onNode, elsewhere []Slot
		for i := range slots {
			s := &slots[i]
			if s.UUID != uuid || !alive(s) {
				continue
			}
			if s.Node == r.Node {
				onNode = append(onNode, *s)
			} else {
				elsewhere = append(elsewhere, *s)
			}
		}
		if len(onNode) == 0 {
			onNode = elsewhere
		}
		hit = append(hit, onNode...)
	}
	return hit
}

// mergeOutages joins a GPU's failures that begin before the previous one
// was repaired: the trace's labels want one outage at a time.
func mergeOutages(fs []trace.Failure) ([]trace.Failure, int) {
	slices.SortStableFunc(fs, func(a, b trace.Failure) int {
		if a.GPU != b.GPU {
			return a.GPU - b.GPU
		}
		return a.Time.Compare(b.Time)
	})
	var out []trace.Failure
	merged := 0
	for _, f := range fs {
		if n := len(out); n > 0 && out[n-1].GPU == f.GPU && f.Time.Before(out[n-1].RepairedAt) {
			out[n-1].RepairedAt = maxTime(out[n-1].RepairedAt, f.RepairedAt)
			merged++
			continue
		}
		out = append(out, f)
	}
	return out, merged
}

// parseDetected reads the condition and its transition time from the
// start of a Detected record's message, as the controller writes it:
// "AcceleratedHardwareReady=False since 2026-01-02T03:04:05Z: …".
func parseDetected(msg string) (cond string, since time.Time, ok bool) {
	head, rest, found := strings.Cut(msg, " since ")
	if !found {
		return "", time.Time{}, false
	}
	cond, _, found = strings.Cut(head, "=")
	if !found || cond == "" || strings.ContainsAny(cond, " \t\n") {
		return "", time.Time{}, false
	}
	ts, _, _ := strings.Cut(rest, " ")
	t, err := time.Parse(time.RFC3339, strings.TrimSuffix(ts, ":"))
	if err != nil || t.Unix() <= 0 { // no incident of ours predates 1970
		return cond, time.Time{}, false
	}
	return cond, t, true
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
