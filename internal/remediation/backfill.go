package remediation

import (
	"context"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/audit"
)

// auditBackfill runs once each time this replica becomes leader and writes
// the audit records of recent incidents that the store lacks. The audit
// sink queues records in memory in front of the store, so a controller
// that exits while the store fails (a full disk, DynamoDB throttling) and
// cannot flush in its last seconds loses what it queued. The incidents
// themselves live in the API server and say what happened; rebuilding the
// steps from their status puts the record back. Keys are the ones the
// reconcilers use, so a record that did reach the store, or that the
// reconcilers write again, is never stored twice.
type auditBackfill struct {
	client client.Reader
	reader audit.Reader
	sink   audit.Sink
	// window: incidents whose last step is older are left alone; their
	// records had time to reach the store long ago.
	window time.Duration
	clock  func() time.Time
	// retry is the wait after a failed read of the cluster or the store.
	retry time.Duration
}

// NeedLeaderElection: the leader writes the audit log.
func (b *auditBackfill) NeedLeaderElection() bool { return true }

func (b *auditBackfill) Start(ctx context.Context) error {
	for {
		n, err := b.run(ctx)
		if err == nil {
			if n > 0 {
				log.FromContext(ctx).Info("Rebuilt lost audit records from incident status", "records", n)
			}
			return nil
		}
		log.FromContext(ctx).Error(err, "Rebuilding lost audit records; retrying", "retryIn", b.retry)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(b.retry):
		}
	}
}

// run writes the missing records and returns how many it handed to the sink.
func (b *auditBackfill) run(ctx context.Context) (int, error) {
	var list v1alpha1.NodeRemediationList
	if err := b.client.List(ctx, &list); err != nil {
		return 0, fmt.Errorf("listing incidents: %w", err)
	}
	cutoff := b.clock().Add(-b.window)
	var recent []*v1alpha1.NodeRemediation
	since := time.Time{}
	for i := range list.Items {
		nr := &list.Items[i]
		if nr.Status.Phase.Terminal() && lastStep(nr).Before(cutoff) {
			continue
		}
		recent = append(recent, nr)
		if t := nr.CreationTimestamp.Time; since.IsZero() || t.Before(since) {
			since = t
		}
	}
	if len(recent) == 0 {
		return 0, nil
	}
	// Detected is written just before the incident is created, with a
	// time from the controller's clock; a minute's slack covers the skew.
	stored, err := b.reader.Query(ctx, audit.Filter{Since: since.Add(-time.Minute), Limit: -1})
	if err != nil {
		return 0, fmt.Errorf("reading the audit log since %s: %w", since.UTC().Format(time.RFC3339), err)
	}
	have := make(map[string]bool, len(stored))
	for _, r := range stored {
		have[r.Key] = true
	}
	var missing []audit.Record
	for _, nr := range recent {
		for _, r := range expectedRecords(nr) {
			if !have[r.Key] {
				missing = append(missing, r)
			}
		}
	}
	if len(missing) == 0 {
		return 0, nil
	}
	if err := b.sink.Write(ctx, missing...); err != nil {
		return 0, fmt.Errorf("writing %d rebuilt audit records: %w", len(missing), err)
	}
	return len(missing), nil
}

// lastStep is when the incident last changed phase.
func lastStep(nr *v1alpha1.NodeRemediation) time.Time {
	if n := len(nr.Status.Phases); n > 0 {
		return nr.Status.Phases[n-1].Time.Time
	}
	return nr.CreationTimestamp.Time
}

// rebuiltNote marks a record written from the incident's status instead of
// at the step itself.
const rebuiltNote = "rebuilt from the NodeRemediation status after the original record was lost"

// expectedRecords are the records the reconcilers write for an incident
// that its status can prove: Detected, Decided, each phase of its own,
// each evicted pod and each accepted provider request, under the keys the
// reconcilers use. Steps the status keeps no trace of (held, blocked
// evictions, escalations, provider errors) are not rebuilt.
func expectedRecords(nr *v1alpha1.NodeRemediation) []audit.Record {
	var a auditor
	in := &incident{nr: nr}
	st := &nr.Status
	detected := detectedRecord(nr.Spec, nr.Name, st.DryRun, nr.CreationTimestamp.Time)
	detected.Message = join(detected.Message, rebuiltNote)
	out := []audit.Record{detected}

	for i, p := range st.Phases {
		kind, ok := phaseKinds[p.Phase]
		n := i + 1 // phaseEntered counts the phase just appended
		if p.Phase == v1alpha1.PhasePending && i == 0 {
			kind, ok, n = audit.Decided, true, 0
		}
		if !ok {
			continue
		}
		r := a.record(in, kind, string(kind), n)
		r.Time, r.Phase, r.Reason, r.Message = p.Time.Time, string(p.Phase), "", join(p.Message, rebuiltNote)
		if p.Phase.Terminal() {
			r.Duration = p.Time.Sub(nr.Spec.Trigger.Since.Time)
			r.Reason = st.Reason
			if p.Phase == v1alpha1.PhaseFailed {
				r.Severity = audit.SeverityCritical
			}
		}
		out = append(out, r)
	}
	// The status keeps no time per eviction; the drain's start bounds it.
	drainStart := enteredAt(nr, v1alpha1.PhaseDraining)
	for _, pod := range st.EvictedPods {
		r := a.record(in, audit.Evicted, "evict/"+pod, 0)
		r.Pod, r.Time, r.Phase, r.Reason, r.Message = pod, drainStart, string(v1alpha1.PhaseDraining), "", rebuiltNote
		out = append(out, r)
	}
	for _, req := range st.ProviderRequests {
		if req.Error == "" {
			r := a.actionRequested(in, req)
			r.Message = join(r.Message, rebuiltNote)
			out = append(out, r)
		}
	}
	return out
}

func join(msg, note string) string {
	if msg == "" {
		return note
	}
	return msg + "; " + note
}
