package remediation

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
)

// causeHeld says why the incident must wait for a person when its cause's
// breaker is open, or opens that breaker when the incident makes one cause
// too many within the window; "" when the incident may go on. It runs under
// admitMu, so two incidents of one cause never both open the breaker.
func (r *remediationReconciler) causeHeld(ctx context.Context, in *incident, matched int) (string, error) {
	p := in.policy
	cause := in.nr.Spec.Cause
	handMade := cause == (v1alpha1.Cause{})
	if handMade { // an incident made by hand: its node says what it runs
		cause = causeOf(in.node, in.nr.Spec.Trigger)
	}
	id := causeID(cause)
	closedAt, _ := breakersClosedAt(p.RemediationPolicy) // a bad annotation closes nothing
	if b := findBreaker(p.Status.CauseBreakers, id); b != nil && b.OpenedAt.After(closedAt) {
		return causeHeldMessage(p.RemediationPolicy, *b), nil
	}
	key := p.Name + "/" + id
	if b, ok := r.causeOpened[key]; ok && b.OpenedAt.After(closedAt) { // opened here, not yet in the cache
		return causeHeldMessage(p.RemediationPolicy, b), nil
	}
	var list v1alpha1.NodeRemediationList
	if err := r.client.List(ctx, &list, client.MatchingLabels{v1alpha1.LabelPolicy: p.Name}); err != nil {
		return "", fmt.Errorf("listing remediations of policy %s: %w", p.Name, err)
	}
	since := r.clock.Now().Add(-p.Spec.CorrelatedFaults.Window.Duration)
	// Nodes, not incidents: each transition of a condition is an incident,
	// so one flapping node (or an agent that flips its own condition) would
	// otherwise open the breaker of a cause the whole fleet shares.
	nodes := map[string]bool{}
	if handMade {
		nodes[in.nr.Spec.NodeName] = true // its own empty cause matches nothing below
	}
	for _, it := range list.Items {
		created := it.CreationTimestamp.Time
		if created.Before(since) || !created.After(closedAt) || it.Status.Action == v1alpha1.ActionIgnore ||
			it.Status.Reason == v1alpha1.ReasonDuplicate || it.Status.Reason == v1alpha1.ReasonPolicyMismatch ||
			causeID(it.Spec.Cause) != id || it.Spec.Cause == (v1alpha1.Cause{}) {
			continue
		}
		if nodes[it.Spec.NodeName] {
			continue
		}
		upgrading, err := nodeInDriverUpgrade(ctx, r.client, it.Spec.NodeName)
		if err != nil {
			return "", fmt.Errorf("reading node %s: %w", it.Spec.NodeName, err)
		}
		if !upgrading {
			nodes[it.Spec.NodeName] = true
		}
	}
	n := len(nodes)
	limit := p.maxPerCause(matched)
	if n <= limit {
		return "", nil
	}
	b, err := r.openCauseBreaker(ctx, p, v1alpha1.CauseBreaker{ID: id, Cause: cause, OpenedAt: metav1.NewTime(r.clock.Now().Truncate(time.Second)), Nodes: int32(n)}, limit)
	if err != nil {
		return "", err
	}
	return causeHeldMessage(p.RemediationPolicy, b), nil
}

// openCauseBreaker records the breaker on the policy's status (read past
// the cache, written with its resourceVersion: a conflict retries the
// incident) and says so with an Event and the metric. It returns the
// breaker in force, which another controller may have opened first.
func (r *remediationReconciler) openCauseBreaker(ctx context.Context, p *policy, b v1alpha1.CauseBreaker, limit int) (v1alpha1.CauseBreaker, error) {
	var fresh v1alpha1.RemediationPolicy
	if err := r.reader.Get(ctx, types.NamespacedName{Name: p.Name}, &fresh); err != nil {
		return b, fmt.Errorf("reading policy %s: %w", p.Name, err)
	}
	closedAt, _ := breakersClosedAt(&fresh)
	if old := findBreaker(fresh.Status.CauseBreakers, b.ID); old != nil && old.OpenedAt.After(closedAt) {
		r.causeOpened[p.Name+"/"+b.ID] = *old
		return *old, nil
	}
	kept := fresh.Status.CauseBreakers[:0]
	for _, o := range fresh.Status.CauseBreakers {
		if o.ID != b.ID && o.OpenedAt.After(closedAt) {
			kept = append(kept, o)
		}
	}
	if len(kept) >= maxCauseBreakers {
		// The status has no room left; the breaker holds in memory and
		// the Event still names it.
		log.FromContext(ctx).Info("too many open cause breakers to record", "policy", p.Name, "cause", b.ID)
	} else {
		fresh.Status.CauseBreakers = append(kept, b)
		if err := r.client.Status().Update(ctx, &fresh); err != nil {
			return b, fmt.Errorf("recording the breaker of cause %s on policy %s: %w", b.ID, p.Name, err)
		}
	}
	r.causeOpened[p.Name+"/"+b.ID] = b
	setCauseBreakerMetric(p.Name, b)
	r.recorder.Eventf(&fresh, nil, corev1.EventTypeWarning, v1alpha1.EventReasonCauseBreakerOpened, "Hold",
		"cause %s (%s): incidents on %d nodes within %s, more than maxPerCause (%d); its incidents wait until a person closes the breaker (annotate the policy %s=<RFC 3339 time now>)",
		b.ID, describeCause(b.Cause), b.Nodes, p.Spec.CorrelatedFaults.Window.Duration, limit, v1alpha1.AnnotationCauseBreakersClosedAt)
	return b, nil
}

// maxCauseBreakers is the most open breakers a policy's status lists (the
// CRD's maxItems).
const maxCauseBreakers = 64

func causeHeldMessage(p *v1alpha1.RemediationPolicy, b v1alpha1.CauseBreaker) string {
	return fmt.Sprintf("the breaker of cause %s (%s) is open since %s: %d nodes failed the same way; a person closes it by annotating policy %s with %s",
		b.ID, describeCause(b.Cause), b.OpenedAt.UTC().Format(time.RFC3339), b.Nodes, p.Name, v1alpha1.AnnotationCauseBreakersClosedAt)
}

func findBreaker(bs []v1alpha1.CauseBreaker, id string) *v1alpha1.CauseBreaker {
	for i := range bs {
		if bs[i].ID == id {
			return &bs[i]
		}
	}
	return nil
}

// breakersClosedAt is the time in the policy's close annotation (zero when
// there is none).
func breakersClosedAt(p *v1alpha1.RemediationPolicy) (time.Time, error) {
	v, ok := p.Annotations[v1alpha1.AnnotationCauseBreakersClosedAt]
	if !ok {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("policy %s: annotation %s=%q is not an RFC 3339 time such as 2026-12-01T12:00:00Z", p.Name, v1alpha1.AnnotationCauseBreakersClosedAt, v)
	}
	return t, nil
}

func setCauseBreakerMetric(policy string, b v1alpha1.CauseBreaker) {
	c := b.Cause
	causeBreakerOpen.WithLabelValues(policy, b.ID, c.Condition, c.DriverVersion, c.KernelVersion, c.Image, c.InstanceType, c.Zone).Set(1)
}

func deleteCauseBreakerMetric(policy string, b v1alpha1.CauseBreaker) {
	c := b.Cause
	causeBreakerOpen.DeleteLabelValues(policy, b.ID, c.Condition, c.DriverVersion, c.KernelVersion, c.Image, c.InstanceType, c.Zone)
}
