package remediation

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/audit"
	"github.com/gpuheal/gpuheal/internal/provider"
)

// maxProviderErrors is how many failed calls for one attempt end the
// incident as Failed (each call already retries throttling inside the
// provider). With the backoff below and the default 2 s poll, the calls
// span about 15 minutes: a cloud API outage or a throttled account of a
// few minutes delays the repair instead of failing it, which would leave
// the node cordoned for an operator.
const maxProviderErrors = 8

// maxProviderBackoff bounds the wait between failed provider calls.
const maxProviderBackoff = 5 * time.Minute

// providerJitter stretches each wait by up to this fraction: incidents
// whose calls failed together (a cloud API outage) call again at different
// times instead of in step.
const providerJitter = 0.2

// providerBackoff is the wait after the n-th failed call of an attempt of
// incident: 5 polls, doubling, at most maxProviderBackoff, stretched by
// up to providerJitter. The stretch is a hash of the incident and n, not a
// random draw, because every reconcile recomputes the wait. It is measured
// from the recorded time of the failure, not slept, because recording the
// failure wakes the reconciler at once.
func providerBackoff(poll time.Duration, n int, incident string) time.Duration {
	d := 5 * poll
	for i := 1; i < n && d < maxProviderBackoff; i++ {
		d *= 2
	}
	d = min(d, maxProviderBackoff)
	h := fnv.New64a()
	_, _ = fmt.Fprintf(h, "%s/%d", incident, n)
	frac := float64(h.Sum64()%1024) / 1024
	// Whole seconds: the failure's time is recorded to the second.
	return d + time.Duration(frac*providerJitter*float64(d)).Truncate(time.Second)
}

// drained starts the action: the phase (and attempt number) is recorded
// before the provider is called, so a crash in between leads to the same
// call with the same token, which providers treat as a repeat.
func (r *remediationReconciler) drained(ctx context.Context, in *incident) (ctrl.Result, error) {
	if done, res, err := r.cancelIfMoot(ctx, in); done {
		return res, err
	}
	st := &in.nr.Status
	switch st.Action {
	case v1alpha1.ActionCordonOnly:
		return ctrl.Result{}, r.finish(ctx, in, v1alpha1.PhaseSucceeded, v1alpha1.ReasonCordonOnly,
			"node cordoned and drained and left for an operator, as the policy says")
	case v1alpha1.ActionResetGPU:
		return r.requestReset(ctx, in)
	case v1alpha1.ActionReplace:
		st.Attempts++
		if err := r.setPhase(ctx, in, v1alpha1.PhaseReplacing, v1alpha1.ReasonReplacing,
			"asking provider "+r.providerName(in)+" to replace the node"); err != nil {
			return ctrl.Result{}, err
		}
	default:
		st.Attempts++
		if err := r.setPhase(ctx, in, v1alpha1.PhaseRebooting, v1alpha1.ReasonRebooting,
			"asking provider "+r.providerName(in)+" to reboot the node"); err != nil {
			return ctrl.Result{}, err
		}
	}
	return r.requestAction(ctx, in)
}

// requestAction calls the provider for the current attempt, once it has no
// successful request on record.
func (r *remediationReconciler) requestAction(ctx context.Context, in *incident) (ctrl.Result, error) {
	st := &in.nr.Status
	action := v1alpha1.ActionReboot
	if st.Phase == v1alpha1.PhaseReplacing {
		action = v1alpha1.ActionReplace
	}
	token := in.nr.Name + "-" + strconv.Itoa(int(st.Attempts))
	errorsThisAttempt := 0
	var lastError time.Time
	for _, req := range st.ProviderRequests {
		if req.Action != action || req.Attempt != st.Attempts {
			continue
		}
		if req.Error == "" {
			return ctrl.Result{}, r.setPhase(ctx, in, v1alpha1.PhaseVerifying, v1alpha1.ReasonVerifying,
				fmt.Sprintf("%s requested (%s); waiting for the node to be Ready and healthy", action, req.RequestID))
		}
		errorsThisAttempt++
		lastError = req.Time.Time
	}
	if in.node == nil {
		if action == v1alpha1.ActionReplace {
			// Most likely our request for this attempt took effect and its
			// answer was lost (a crash or a failed write); record it, and
			// say that it may have been someone else.
			st.ProviderRequests = append(st.ProviderRequests, v1alpha1.ProviderRequest{Action: action, Attempt: st.Attempts,
				Provider: r.providerName(in), Time: metav1.NewTime(r.clock.Now()), RequestID: token})
			return ctrl.Result{}, r.setPhase(ctx, in, v1alpha1.PhaseVerifying, v1alpha1.ReasonNodeGone,
				"the node is already gone: the replacement requested for attempt "+strconv.Itoa(int(st.Attempts))+
					" took effect before its answer was recorded, or someone else removed the node")
		}
		return ctrl.Result{}, r.finish(ctx, in, v1alpha1.PhaseCancelled, v1alpha1.ReasonNodeDeleted, "the node no longer exists")
	}
	if errorsThisAttempt > 0 {
		if wait := providerBackoff(r.poll, errorsThisAttempt, in.nr.Name) - r.clock.Since(lastError); wait > 0 {
			return ctrl.Result{RequeueAfter: wait}, nil
		}
	}
	prov, err := r.providers.For(in.policy.Spec.Provider, in.node)
	if err != nil {
		return ctrl.Result{}, r.finish(ctx, in, v1alpha1.PhaseFailed, v1alpha1.ReasonNoProvider, err.Error()+"; the node stays cordoned")
	}
	var id string
	if action == v1alpha1.ActionReplace {
		id, err = prov.Replace(ctx, in.node, token)
	} else {
		id, err = prov.Reboot(ctx, in.node, token)
	}
	req := v1alpha1.ProviderRequest{Action: action, Attempt: st.Attempts, Provider: prov.Name(), Time: metav1.NewTime(r.clock.Now()), RequestID: id}
	if err != nil {
		req.Error = truncate(err.Error(), 1024)
	}
	if req.RequestID == "" {
		req.RequestID = token
	}
	st.ProviderRequests = append(st.ProviderRequests, req)
	if err != nil {
		rec := r.audit.record(in, audit.ProviderError, "provider-error/"+strconv.Itoa(int(st.Attempts)), errorsThisAttempt)
		rec.Provider, rec.Reason, rec.Message, rec.Severity = prov.Name(), string(action), req.Error, audit.SeverityWarning
		if errors.Is(err, provider.ErrNotOwned) {
			rec.Reason = v1alpha1.ReasonNotOwned
		}
		r.audit.write(ctx, rec)
	} else {
		r.audit.write(ctx, r.audit.actionRequested(in, req))
	}
	switch {
	case errors.Is(err, provider.ErrUnsupported) && action == v1alpha1.ActionReboot:
		// Karpenter and Cluster API cannot reboot: replacing is what
		// their users expect, and the drain has already happened.
		st.Action = v1alpha1.ActionReplace
		st.Attempts++
		rec := r.audit.record(in, audit.Escalated, string(audit.Escalated), int(st.Attempts))
		rec.Action, rec.Reason, rec.Severity = string(v1alpha1.ActionReplace), v1alpha1.ReasonRebootUnsupported, audit.SeverityWarning
		r.audit.write(ctx, rec)
		if err := r.setPhase(ctx, in, v1alpha1.PhaseReplacing, v1alpha1.ReasonRebootUnsupported,
			fmt.Sprintf("provider %s cannot reboot a node; replacing it instead", prov.Name())); err != nil {
			return ctrl.Result{}, err
		}
		return r.requestAction(ctx, in)
	case errors.Is(err, provider.ErrNotOwned):
		// The node points at a machine that is not provably its own: a
		// retry would not change that, and a person must look at who
		// wrote the node's hints.
		return ctrl.Result{}, r.finish(ctx, in, v1alpha1.PhaseFailed, v1alpha1.ReasonNotOwned,
			fmt.Sprintf("provider %s refused to %s this node: %v; the node stays cordoned for an operator", prov.Name(), action, err))
	case errors.Is(err, provider.ErrUnsupported):
		return ctrl.Result{}, r.finish(ctx, in, v1alpha1.PhaseFailed, v1alpha1.ReasonUnsupported,
			fmt.Sprintf("provider %s cannot %s this node: %v; the node stays cordoned for an operator", prov.Name(), action, err))
	case err != nil && errorsThisAttempt+1 >= maxProviderErrors:
		return ctrl.Result{}, r.finish(ctx, in, v1alpha1.PhaseFailed, v1alpha1.ReasonProviderError,
			fmt.Sprintf("%s failed %d times, last: %v; the node stays cordoned", action, errorsThisAttempt+1, err))
	case err != nil:
		if uerr := r.client.Status().Update(ctx, in.nr); uerr != nil {
			return ctrl.Result{}, uerr
		}
		r.recorder.Eventf(in.nr, in.node, corev1.EventTypeWarning, v1alpha1.ReasonProviderError, string(action), "%v", err)
		return ctrl.Result{RequeueAfter: providerBackoff(r.poll, errorsThisAttempt+1, in.nr.Name)}, nil
	}
	return ctrl.Result{}, r.setPhase(ctx, in, v1alpha1.PhaseVerifying, v1alpha1.ReasonVerifying,
		fmt.Sprintf("%s requested from %s (%s); waiting for the node to be Ready and healthy", action, prov.Name(), req.RequestID))
}

// verifying waits for the outcome: a rebooted node Ready and healthy again,
// or the old node gone and its replacement Ready. A reboot that does not
// heal in time escalates to a replacement.
func (r *remediationReconciler) verifying(ctx context.Context, in *incident) (ctrl.Result, error) {
	st := &in.nr.Status
	e := in.policy.Spec.Escalation
	if st.Action == v1alpha1.ActionResetGPU {
		return r.resetVerifying(ctx, in)
	}
	since := r.clock.Since(enteredAt(in.nr, v1alpha1.PhaseVerifying))
	if st.Action != v1alpha1.ActionReplace {
		if in.node == nil {
			return ctrl.Result{}, r.finish(ctx, in, v1alpha1.PhaseCancelled, v1alpha1.ReasonNodeDeleted, "the node was deleted while rebooting")
		}
		if healthy, wait := r.healthyFor(in); healthy {
			if gated(in) {
				return ctrl.Result{}, r.startValidating(ctx, in, in.node, "the node is Ready and healthy after the reboot")
			}
			// The gate's taint, from a policy that validated when the
			// incident entered Validating and no longer does.
			if err := r.setValidatingTaint(ctx, in.node, false); err != nil {
				return ctrl.Result{}, err
			}
			if err := r.uncordon(ctx, in); err != nil {
				return ctrl.Result{}, err
			}
			r.recovered(ctx, in, in.nr.Spec.NodeName)
			return ctrl.Result{}, r.finish(ctx, in, v1alpha1.PhaseSucceeded, v1alpha1.ReasonRecovered, "the node is Ready and healthy after the reboot; uncordoned")
		} else if wait > 0 {
			return ctrl.Result{RequeueAfter: min(wait, r.poll)}, nil
		}
		if since < e.RebootTimeout.Duration {
			return ctrl.Result{RequeueAfter: r.poll}, nil
		}
		st.Action = v1alpha1.ActionReplace
		st.Attempts++
		rec := r.audit.record(in, audit.Escalated, string(audit.Escalated), int(st.Attempts))
		rec.Action, rec.Reason, rec.Severity = string(v1alpha1.ActionReplace), v1alpha1.ReasonRebootDidNotHeal, audit.SeverityWarning
		r.audit.write(ctx, rec)
		return ctrl.Result{}, r.setPhase(ctx, in, v1alpha1.PhaseReplacing, v1alpha1.ReasonRebootDidNotHeal,
			fmt.Sprintf("the node was not Ready and healthy %s after the reboot; replacing it", e.RebootTimeout.Duration))
	}
	if in.node != nil {
		if since > e.ReplaceTimeout.Duration {
			return ctrl.Result{}, r.finish(ctx, in, v1alpha1.PhaseFailed, v1alpha1.ReasonReplaceTimeout,
				fmt.Sprintf("the node still exists %s after the replacement was requested", e.ReplaceTimeout.Duration))
		}
		return ctrl.Result{RequeueAfter: r.poll}, nil
	}
	replacement := st.Replacement
	if replacement == "" {
		used := in.policy.Spec.Provider
		if reqs := st.ProviderRequests; len(reqs) > 0 {
			used = reqs[len(reqs)-1].Provider // the one that acted, whatever the policy says now
		}
		if prov, err := r.providers.For(used, &corev1.Node{}); err == nil {
			stub := &corev1.Node{}
			stub.Name = in.nr.Spec.NodeName
			if s, err := prov.Status(ctx, stub); err == nil {
				replacement = s.Replacement
			}
		}
	}
	if replacement == "" {
		// The cloud's group or provisioner brings a node the provider
		// cannot name: a new node of the policy, Ready and healthy, that
		// no other incident has taken, stands for it.
		var err error
		if replacement, err = r.claimReplacement(ctx, in); err != nil {
			return ctrl.Result{}, err
		}
		if replacement == "" {
			if since > e.ReplaceTimeout.Duration {
				return ctrl.Result{}, r.finish(ctx, in, v1alpha1.PhaseFailed, v1alpha1.ReasonReplaceTimeout,
					fmt.Sprintf("the node was removed, and no new node of policy %s was Ready and healthy %s after the request", in.policy.Name, e.ReplaceTimeout.Duration))
			}
			return ctrl.Result{RequeueAfter: r.poll}, nil
		}
	}
	if st.Replacement == "" {
		st.Replacement = replacement
		if err := r.client.Status().Update(ctx, in.nr); err != nil {
			return ctrl.Result{}, err
		}
	}
	var n corev1.Node
	switch err := r.client.Get(ctx, types.NamespacedName{Name: replacement}, &n); {
	case apierrors.IsNotFound(err): // not there yet
	case err != nil:
		return ctrl.Result{}, err
	default:
		if gated(in) {
			// Tainted from the moment it is known, not once it has been
			// healthy for the hold: work must not land on it before its
			// checks.
			if err := r.setValidatingTaint(ctx, &n, true); err != nil {
				return ctrl.Result{}, err
			}
		}
		healthy, wait := r.replacementHealthy(in, &n)
		switch {
		case healthy && gated(in):
			return ctrl.Result{}, r.startValidating(ctx, in, &n, "replacement node "+replacement+" is Ready and healthy")
		case healthy:
			// The gate's taint, from a policy that validated then and no
			// longer does.
			if err := r.setValidatingTaint(ctx, &n, false); err != nil {
				return ctrl.Result{}, err
			}
			r.recovered(ctx, in, replacement)
			return ctrl.Result{}, r.finish(ctx, in, v1alpha1.PhaseSucceeded, v1alpha1.ReasonReplaced, "replacement node "+replacement+" is Ready and healthy")
		case wait > 0 && since <= e.ReplaceTimeout.Duration:
			return ctrl.Result{RequeueAfter: min(wait, r.poll)}, nil
		}
	}
	if since > e.ReplaceTimeout.Duration {
		return ctrl.Result{}, r.finish(ctx, in, v1alpha1.PhaseFailed, v1alpha1.ReasonReplaceTimeout,
			fmt.Sprintf("replacement node %s not Ready and healthy %s after the request", replacement, e.ReplaceTimeout.Duration))
	}
	return ctrl.Result{RequeueAfter: r.poll}, nil
}

// healthyFor reports whether the node is Ready, shows none of the policy's
// unhealthy conditions, and has for the recovery hold; otherwise how long
// until it would have (0 when it is not healthy at all).
func (r *remediationReconciler) healthyFor(in *incident) (bool, time.Duration) {
	if !nodeReady(in.node) {
		return false, 0
	}
	since, ok := r.healthySince(in)
	if !ok {
		return false, 0
	}
	if ready := findCondition(in.node, string(corev1.NodeReady)); ready != nil && ready.LastTransitionTime.After(since) {
		since = ready.LastTransitionTime.Time
	}
	wait := since.Add(in.policy.Spec.RecoveryHold.Duration).Sub(r.clock.Now())
	return wait <= 0, max(wait, 0)
}

// replacementHealthy reports whether the replacement node is Ready, reports
// the condition that opened the incident (its agent is up: a node that has
// not said yet is not known to be healthy) without any of the policy's
// unhealthy conditions, and has held that for the recovery hold; otherwise
// how long until it would have (0 when it is not healthy at all).
func (r *remediationReconciler) replacementHealthy(in *incident, n *corev1.Node) (bool, time.Duration) {
	if !nodeReady(n) || in.policy.unhealthyNow(n) != nil {
		return false, 0
	}
	reported := findCondition(n, in.nr.Spec.Trigger.Type)
	if reported == nil {
		return false, 0
	}
	since := reported.LastTransitionTime.Time
	if c := findCondition(n, string(corev1.NodeReady)); c.LastTransitionTime.After(since) {
		since = c.LastTransitionTime.Time
	}
	wait := since.Add(in.policy.Spec.RecoveryHold.Duration).Sub(r.clock.Now())
	return wait <= 0, max(wait, 0)
}

func nodeReady(n *corev1.Node) bool {
	c := findCondition(n, string(corev1.NodeReady))
	return c != nil && c.Status == corev1.ConditionTrue
}

// recovered records that the node, or its replacement, is Ready and healthy.
func (r *remediationReconciler) recovered(ctx context.Context, in *incident, node string) {
	rec := r.audit.record(in, audit.Recovered, string(audit.Recovered), 0)
	rec.Duration = r.clock.Since(in.nr.Spec.Trigger.Since.Time)
	rec.Message = node + " is Ready and healthy"
	r.audit.write(ctx, rec)
}
