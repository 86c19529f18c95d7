package remediation

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
)

// policyStatusLoop keeps each policy's status (matched, unhealthy, in
// flight, breaker) and the breaker metric current even when no incident is
// waiting, and says with an Event when a breaker opens or closes.
type policyStatusLoop struct {
	client   client.Client
	recorder events.EventRecorder
	fleet    *fleetCounter
	slots    *slotCounter
	every    time.Duration
	// preflight holds the providers' last preflights (nil: none run).
	preflight *preflightResults

	mu       sync.Mutex
	badClose map[string]string // policy → close annotation last reported as bad
}

// NeedLeaderElection: only the leader writes status.
func (l *policyStatusLoop) NeedLeaderElection() bool { return true }

func (l *policyStatusLoop) Start(ctx context.Context) error {
	t := time.NewTicker(l.every)
	defer t.Stop()
	for {
		l.refresh(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func (l *policyStatusLoop) refresh(ctx context.Context) {
	var list v1alpha1.RemediationPolicyList
	if err := l.client.List(ctx, &list); err != nil {
		log.FromContext(ctx).Error(err, "listing policies")
		return
	}
	for i := range list.Items {
		if err := l.refreshOne(ctx, &list.Items[i]); err != nil && ctx.Err() == nil {
			log.FromContext(ctx).Error(err, "updating policy status", "policy", list.Items[i].Name)
		}
	}
}

func (l *policyStatusLoop) refreshOne(ctx context.Context, obj *v1alpha1.RemediationPolicy) error {
	p, err := newPolicy(obj)
	if err != nil {
		return err
	}
	view, err := l.fleet.view(ctx, p)
	if err != nil {
		return err
	}
	active, err := l.slots.active(ctx, l.client, p.Name, "")
	if err != nil {
		return err
	}
	orig := obj.DeepCopy()
	st := &obj.Status
	wasOpen := st.BreakerOpen
	st.ObservedGeneration = obj.Generation
	st.MatchedNodes, st.UnhealthyNodes, st.InFlight = int32(view.matched), int32(view.unhealthy), int32(active)
	st.BreakerOpen = view.breakerOpen()
	cond := metav1.Condition{Type: v1alpha1.ConditionBreakerOpen, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonWithinLimit,
		Message: "unhealthy nodes within maxUnhealthy", ObservedGeneration: obj.Generation}
	if st.BreakerOpen {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, v1alpha1.ReasonTooManyUnhealthy, view.breakerMessage()
	}
	meta.SetStatusCondition(&st.Conditions, cond)
	wasReady := meta.FindStatusCondition(orig.Status.Conditions, v1alpha1.ConditionProviderReady)
	var pre *preflightResult
	if l.preflight != nil {
		if r, ok := l.preflight.get(obj.Name); ok {
			pre = &r
			meta.SetStatusCondition(&st.Conditions, r.condition())
			providerReady.WithLabelValues(obj.Name).Set(boolFloat(r.ready))
		}
	}
	closed := l.closeCauseBreakers(obj)
	if len(closed) == 0 && equalStatus(orig.Status, obj.Status) {
		return nil
	}
	patch := client.MergeFrom(orig)
	if len(closed) > 0 {
		// The list is written whole: a breaker opened meanwhile (not yet
		// in the cache) must not be dropped, so this write is refused
		// when the policy changed since it was read.
		patch = client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})
	}
	if err := l.client.Status().Patch(ctx, obj, patch); err != nil {
		return err
	}
	for _, b := range closed {
		deleteCauseBreakerMetric(obj.Name, b)
		l.recorder.Eventf(obj, nil, corev1.EventTypeNormal, v1alpha1.EventReasonCauseBreakerClosed, "Resume",
			"breaker of cause %s (%s) closed by %s=%s: its incidents go on, and only incidents opened from now count towards a new one",
			b.ID, describeCause(b.Cause), v1alpha1.AnnotationCauseBreakersClosedAt, obj.Annotations[v1alpha1.AnnotationCauseBreakersClosedAt])
	}
	switch {
	case pre != nil && !pre.ready && (wasReady == nil || wasReady.Status != metav1.ConditionFalse || wasReady.Reason != pre.reason):
		effect := "no new incident of this policy starts until it passes"
		if pol, err := newPolicy(obj); err == nil && !holdsIncidents(pol, pre.reason) {
			effect = "incidents go on; these nodes' own incidents will fail"
		}
		l.recorder.Eventf(obj, nil, corev1.EventTypeWarning, v1alpha1.EventReasonProviderNotReady, "Hold",
			"provider preflight failed (%s): %s; %s", pre.reason, pre.message, effect)
	case pre != nil && pre.ready && wasReady != nil && wasReady.Status == metav1.ConditionFalse:
		l.recorder.Eventf(obj, nil, corev1.EventTypeNormal, v1alpha1.EventReasonProviderReady, "Resume", "provider preflight passed: %s", pre.message)
	}
	switch {
	case st.BreakerOpen && !wasOpen:
		l.recorder.Eventf(obj, nil, corev1.EventTypeWarning, v1alpha1.EventReasonBreakerOpened, "Hold", "%s", view.breakerMessage())
	case !st.BreakerOpen && wasOpen:
		l.recorder.Eventf(obj, nil, corev1.EventTypeNormal, v1alpha1.EventReasonBreakerClosed, "Resume",
			"%d of %d nodes unhealthy, within maxUnhealthy (%d): remediation resumes", view.unhealthy, view.matched, view.maxUnhealthy)
	}
	return nil
}

// closeCauseBreakers drops from the status the cause breakers that the
// policy's close annotation closes and returns them; the open ones keep
// their metric (also after a restart).
func (l *policyStatusLoop) closeCauseBreakers(obj *v1alpha1.RemediationPolicy) []v1alpha1.CauseBreaker {
	closedAt, err := breakersClosedAt(obj)
	if err != nil {
		v := obj.Annotations[v1alpha1.AnnotationCauseBreakersClosedAt]
		l.mu.Lock()
		said := l.badClose[obj.Name] == v
		if l.badClose == nil {
			l.badClose = map[string]string{}
		}
		l.badClose[obj.Name] = v
		l.mu.Unlock()
		if !said {
			l.recorder.Eventf(obj, nil, corev1.EventTypeWarning, v1alpha1.EventReasonBadBreakerClose, "Hold", "%v; no breaker is closed", err)
		}
	}
	var open, closed []v1alpha1.CauseBreaker
	for _, b := range obj.Status.CauseBreakers {
		if b.OpenedAt.After(closedAt) {
			open = append(open, b)
			setCauseBreakerMetric(obj.Name, b)
		} else {
			closed = append(closed, b)
		}
	}
	if len(closed) > 0 {
		obj.Status.CauseBreakers = open
	}
	return closed
}

func equalStatus(a, b v1alpha1.RemediationPolicyStatus) bool {
	if a.ObservedGeneration != b.ObservedGeneration || a.MatchedNodes != b.MatchedNodes ||
		a.UnhealthyNodes != b.UnhealthyNodes || a.InFlight != b.InFlight || a.BreakerOpen != b.BreakerOpen {
		return false
	}
	ca, cb := meta.FindStatusCondition(a.Conditions, v1alpha1.ConditionBreakerOpen), meta.FindStatusCondition(b.Conditions, v1alpha1.ConditionBreakerOpen)
	if ca == nil || cb == nil || ca.Status != cb.Status || ca.Message != cb.Message {
		return false
	}
	ra, rb := meta.FindStatusCondition(a.Conditions, v1alpha1.ConditionProviderReady), meta.FindStatusCondition(b.Conditions, v1alpha1.ConditionProviderReady)
	if ra == nil || rb == nil {
		return ra == nil && rb == nil
	}
	return ra.Status == rb.Status && ra.Reason == rb.Reason && ra.Message == rb.Message && ra.ObservedGeneration == rb.ObservedGeneration
}
