package remediation

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/audit"
	"github.com/gpuheal/gpuheal/internal/history"
	"github.com/gpuheal/gpuheal/internal/score"
)

// lemonHistory is the incident history the lemon rule counts: read from
// the audit store the first time a rule asks (so it survives restarts and
// leader changes), then fed by the records this controller writes. Only
// decisions are kept, one per incident.
type lemonHistory struct {
	store audit.Reader // nil: history starts empty

	mu sync.Mutex
	// from is how far back the store was read; zero: not yet.
	from      time.Time
	incidents []score.Incident
	// seen: an incident decided again (a status write that conflicted,
	// a restart before it) is one incident.
	seen map[string]bool
}

// observe takes the controller's own records as they are written.
func (h *lemonHistory) observe(r audit.Record) {
	in, ok := history.Incident(&r)
	if !ok {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.seen == nil {
		h.seen = map[string]bool{}
	}
	if !h.seen[in.ID] {
		h.seen[in.ID] = true
		h.incidents = append(h.incidents, in)
	}
}

// since returns the incidents from a time on, reading the store first
// when it has not been read that far back. When that read fails it
// returns what this process saw with the error, and reads again next time.
func (h *lemonHistory) since(ctx context.Context, from time.Time) ([]score.Incident, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var readErr error
	if h.store != nil && (h.from.IsZero() || from.Before(h.from)) {
		recs, err := h.store.Query(ctx, audit.Filter{Since: from, Limit: -1})
		if err != nil {
			readErr = fmt.Errorf("reading the incident history from the audit store: %w", err)
		}
		// The store holds what observe saw too: start again from it.
		stored := map[string]bool{}
		var merged []score.Incident
		for _, in := range history.Incidents(recs) {
			if !stored[in.ID] {
				stored[in.ID] = true
				merged = append(merged, in)
			}
		}
		for _, in := range h.incidents {
			if !stored[in.ID] {
				merged = append(merged, in)
			}
		}
		if err == nil {
			h.incidents, h.from = merged, from
			h.seen = make(map[string]bool, len(merged))
			for _, in := range merged {
				h.seen[in.ID] = true
			}
		}
	}
	out := make([]score.Incident, 0, len(h.incidents))
	for _, in := range h.incidents {
		if !in.Time.Before(from) {
			out = append(out, in)
		}
	}
	return out, readErr
}

// machineOf is a node's hardware identity: its system UUID (the board's
// SMBIOS UUID, which the kubelet reads; a cloud instance's own), else its
// provider ID (a cloud instance), else "".
func machineOf(n *corev1.Node) string {
	if n == nil {
		return ""
	}
	if id := n.Status.NodeInfo.SystemUUID; id != "" {
		return id
	}
	return n.Spec.ProviderID
}

// lemonRule is the policy's rule; ok is false when it is off.
func lemonRule(p *policy) (score.LemonRule, bool) {
	l := p.Spec.Lemon
	r := score.DefaultLemonRule() // what the CRD defaults an unset field to
	if l.Incidents != nil {
		r.Incidents = int(*l.Incidents)
	}
	if r.Incidents == 0 {
		return score.LemonRule{}, false
	}
	if l.Window != nil {
		r.Window = l.Window.Duration
	}
	return r, r.Validate() == nil
}

// lemonDecision is what the rule changes about a decided action.
type lemonDecision struct {
	action v1alpha1.Action
	why    string
}

// checkLemon says whether this incident's machine is a lemon under
// the policy, for an incident that would reset or reboot: a replacement is
// already new hardware, and a cordon already waits for a person.
func (r *remediationReconciler) checkLemon(ctx context.Context, in *incident, action v1alpha1.Action) (lemonDecision, bool) {
	rule, on := lemonRule(in.policy)
	if !on || r.lemons == nil || (action != v1alpha1.ActionResetGPU && action != v1alpha1.ActionReboot) {
		return lemonDecision{}, false
	}
	now := r.audit.now()
	past, err := r.lemons.since(ctx, now.Add(-rule.Window))
	if err != nil {
		// A store that cannot be read must not stop a repair: the rule
		// counts what this process saw, and says so.
		log.FromContext(ctx).Error(err, "the lemon rule counts only this controller's own incidents", "remediation", in.nr.Name)
	}
	next := score.Incident{ID: in.nr.Name, Time: now, Machine: machineOf(in.node), Node: in.nr.Spec.NodeName,
		GPUs: gpuUUIDs(in.nr.Spec.Trigger.Message), Class: score.ClassFor(string(action), audit.SeverityCritical)}
	l, ok := rule.Check(past, next)
	if !ok {
		return lemonDecision{}, false
	}
	d := lemonDecision{action: v1alpha1.ActionReplace, why: "lemon: " + describeLemon(l, rule) + "; replacing instead of a " + string(action)}
	if in.policy.Spec.Lemon.Action == v1alpha1.LemonQuarantine {
		d.action = v1alpha1.ActionCordonOnly
		d.why = "lemon: " + describeLemon(l, rule) + "; quarantined for a person (RMA) instead of a " + string(action)
	}
	return d, true
}

// describeLemon names the offender and lists its incidents, for the
// incident's message, its Event and its audit record.
func describeLemon(l score.Lemon, rule score.LemonRule) string {
	var b strings.Builder
	fmt.Fprintf(&b, "machine %s had %d hardware incidents within %s (the rule: %d)", l.Machine, len(l.Incidents), rule.Window, rule.Incidents)
	if l.GPU != "" {
		fmt.Fprintf(&b, ", all of GPU %s", l.GPU)
	}
	b.WriteString(":")
	for i, inc := range l.Incidents {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, " %s on %s at %s (%s)", inc.ID, inc.Node, inc.Time.UTC().Format(time.RFC3339), inc.Class)
	}
	return b.String()
}
