package remediation

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/audit"
	"github.com/gpuheal/gpuheal/internal/provider"
)

// start decides the action for a new incident. The decision is written
// with the incident's first status write (held, cordoned or cancelled),
// which saves a round trip before the cordon; if the controller dies first,
// the next one decides again from the same facts.
func (r *remediationReconciler) start(ctx context.Context, in *incident) (bool, error) {
	p, nr := in.policy, in.nr
	if in.node != nil {
		if why, err := r.policyMismatch(ctx, in); err != nil || why != "" {
			if err != nil {
				return false, err
			}
			return false, r.finish(ctx, in, v1alpha1.PhaseCancelled, v1alpha1.ReasonPolicyMismatch, why+"; the incident is refused")
		}
	}
	trigger := nr.Spec.Trigger
	if in.node != nil {
		// The reason and advice are the node's, as its agent wrote them,
		// never what an incident's author put in its spec (policyMismatch
		// has checked that the node shows the condition).
		if c := findCondition(in.node, trigger.Type); c != nil {
			trigger.Reason = c.Reason
		}
		trigger.RecommendedAction, _ = recommendedAction(in.node, trigger.Type)
	}
	action := p.chooseAction(trigger)
	why := "by the policy's action rules"
	nr.Status.GPUReset = nil
	if action == v1alpha1.ActionResetGPU {
		d := r.decideReset(in)
		action, why, nr.Status.GPUReset = d.action, d.why, d.status
		if d.bad != nil {
			// Said once, when the incident decides; it goes on with a
			// reboot, which needs nothing from the report.
			log.FromContext(ctx).Error(d.bad, "ignoring the agent's GPU fault report", "remediation", nr.Name)
			r.recorder.Eventf(in.node, nr, corev1.EventTypeWarning, v1alpha1.EventReasonBadGPUFaults, "Decide",
				"%v; rebooting instead of resetting a GPU", d.bad)
		}
	}
	if action == v1alpha1.ActionReboot {
		a, how, err := r.rebootOrReplace(ctx, in)
		if err != nil {
			return false, err
		}
		if a == v1alpha1.ActionReplace {
			esc := strings.TrimSuffix(strings.TrimPrefix(how, " ("), ")")
			if why == "by the policy's action rules" {
				why = esc
			} else {
				why += "; " + esc
			}
			action = a
		}
	}
	if d, lemon := r.checkLemon(ctx, in, action); lemon {
		action, why, nr.Status.GPUReset = d.action, d.why, nil
		r.recorder.Eventf(in.node, nr, corev1.EventTypeWarning, v1alpha1.EventReasonLemon, "Decide", "%s", d.why)
	}
	nr.Status.Action = action
	nr.Status.DryRun = p.Spec.DryRun
	msg := fmt.Sprintf("%s=%s (%s): action %s %s, provider %s", nr.Spec.Trigger.Type, nr.Spec.Trigger.Status,
		nr.Spec.Trigger.Reason, action, why, r.providerName(in))
	r.enterPhase(in, v1alpha1.PhasePending, v1alpha1.ReasonDecided, msg)
	r.announce(ctx, in, v1alpha1.PhasePending, v1alpha1.ReasonDecided, msg)
	r.audit.write(ctx, r.audit.record(in, audit.Decided, string(audit.Decided), 0))
	return true, nil
}

// policyMismatch says why the incident may not go on under the policy it
// names, or "": that policy must be the only one selecting the node, the
// incident must carry its label (maxParallel counts incidents by it), and
// the trigger must be one of its unhealthy conditions that the node shows.
// The incident opener always makes such incidents; one made by hand that
// names a laxer policy, or none, is refused.
func (r *remediationReconciler) policyMismatch(ctx context.Context, in *incident) (string, error) {
	nr := in.nr
	pols, err := policiesFor(ctx, r.client, in.node)
	if err != nil {
		return "", err
	}
	var names []string
	for _, p := range pols {
		names = append(names, p.Name)
	}
	switch {
	case len(pols) != 1:
		return fmt.Sprintf("node %s is selected by %d policies %v, not by policy %s alone", nr.Spec.NodeName, len(pols), names, nr.Spec.PolicyName), nil
	case pols[0].Name != nr.Spec.PolicyName:
		return fmt.Sprintf("node %s is selected by policy %s, not %s", nr.Spec.NodeName, pols[0].Name, nr.Spec.PolicyName), nil
	case nr.Labels[v1alpha1.LabelPolicy] != nr.Spec.PolicyName:
		return fmt.Sprintf("label %s=%q does not name policy %s", v1alpha1.LabelPolicy, nr.Labels[v1alpha1.LabelPolicy], nr.Spec.PolicyName), nil
	}
	t := nr.Spec.Trigger
	c := findCondition(in.node, t.Type)
	if c == nil || metav1.ConditionStatus(c.Status) != t.Status || !in.policy.lists(t.Type, t.Status) {
		return fmt.Sprintf("node %s does not show %s=%s, or policy %s does not count it as unhealthy", nr.Spec.NodeName, t.Type, t.Status, nr.Spec.PolicyName), nil
	}
	return "", nil
}

// rebootsWithin counts the reboots requested for the node by its other
// incidents since a moment.
func rebootsWithin(items []v1alpha1.NodeRemediation, except string, since time.Time) int {
	n := 0
	for _, it := range items {
		if it.Name == except {
			continue
		}
		for _, req := range it.Status.ProviderRequests {
			if req.Action == v1alpha1.ActionReboot && req.Error == "" && req.Time.After(since) {
				n++
			}
		}
	}
	return n
}

func (r *remediationReconciler) providerName(in *incident) string {
	if in.node != nil {
		return r.providers.Resolve(in.policy.Spec.Provider, in.node)
	}
	if in.policy.Spec.Provider != "" {
		return in.policy.Spec.Provider
	}
	return provider.None
}

// pending holds the incident until it may start: the node must still be
// unhealthy, not opted out, the policy neither paused nor in dry run, the
// breaker closed and a parallel slot free. Then it cordons the node.
func (r *remediationReconciler) pending(ctx context.Context, in *incident) (ctrl.Result, error) {
	nr := in.nr
	if done, res, err := r.cancelIfMoot(ctx, in); done {
		return res, err
	}
	if nr.Status.Action == v1alpha1.ActionIgnore {
		return ctrl.Result{}, r.finish(ctx, in, v1alpha1.PhaseCancelled, v1alpha1.ReasonActionIgnore, "the policy maps this problem to Ignore; recorded only")
	}
	p := in.policy
	if p.Spec.DryRun {
		if meta.IsStatusConditionTrue(nr.Status.Conditions, v1alpha1.ConditionDryRun) {
			return ctrl.Result{RequeueAfter: 5 * r.poll}, nil // decided and recorded; watch for recovery
		}
		return r.hold(ctx, in, v1alpha1.ConditionDryRun, metav1.ConditionTrue, v1alpha1.ReasonDryRun, r.dryRunPlan(ctx, in), 5*r.poll)
	}
	if nr.Status.DryRun { // the policy left dry run: this incident may act now
		nr.Status.DryRun = false
		r.setCondition(in, v1alpha1.ConditionDryRun, metav1.ConditionFalse, v1alpha1.ReasonDryRunEnded, "the policy is no longer in dry run")
	}
	if p.Spec.Paused {
		return r.hold(ctx, in, v1alpha1.ConditionAdmitted, metav1.ConditionFalse, v1alpha1.ReasonPaused, "policy "+p.Name+" is paused", 5*r.poll)
	}
	if c := providerNotReady(p); c != nil {
		// Cordoning and draining a node whose provider cannot then reboot
		// or replace it would only take capacity away: the node keeps
		// serving until the preflight passes.
		return r.hold(ctx, in, v1alpha1.ConditionAdmitted, metav1.ConditionFalse, v1alpha1.ReasonProviderNotReady,
			fmt.Sprintf("policy %s's provider is not ready (%s): %s", p.Name, c.Reason, c.Message), 5*r.poll)
	}
	res, admitted, err := r.admit(ctx, in)
	if err != nil || !admitted {
		return res, err
	}
	// Go on at once: the next step needs no wait.
	if nr.Status.Phase == v1alpha1.PhaseDraining { // a partial drain, not cordoned
		return r.draining(ctx, in)
	}
	return r.cordoned(ctx, in)
}

// admit takes a parallel slot for the incident when the breaker is closed
// and one is free, then cordons the node and records it. Only counting and
// reserving the slot happen under admitMu, so one slow API call does not
// hold up every other admission.
func (r *remediationReconciler) admit(ctx context.Context, in *incident) (ctrl.Result, bool, error) {
	p, nr := in.policy, in.nr
	res, reserved, view, active, err := r.reserveSlot(ctx, in)
	if err != nil || !reserved {
		return res, false, err
	}
	admitted := false
	defer func() {
		if !admitted {
			r.slots.release(p.Name, nr.Name)
		}
	}()
	if dup, err := r.olderOpenIncident(ctx, in); err != nil {
		return ctrl.Result{}, false, err
	} else if dup != "" {
		return ctrl.Result{}, false, r.finish(ctx, in, v1alpha1.PhaseCancelled, v1alpha1.ReasonDuplicate, "incident "+dup+" is already open for this node")
	}
	// A GPU reset that evicts only its GPUs' pods leaves the node
	// schedulable: it goes from admission straight to draining them.
	partial := partialDrain(in)
	phase, reason, msg := v1alpha1.PhaseCordoned, v1alpha1.ReasonCordoned, "node cordoned and tainted "+v1alpha1.TaintUnhealthy+":NoSchedule"
	if partial {
		phase, reason, msg = v1alpha1.PhaseDraining, v1alpha1.ReasonPartialDrain, "evicting through the Eviction API only the pods holding "+gpuNames(nr.Status.GPUReset.GPUs)+"; the node stays schedulable"+drainModesNote(in)
	} else if err := r.cordon(ctx, in); err != nil {
		return ctrl.Result{}, false, err
	}
	if nr.Status.Action == v1alpha1.ActionResetGPU && nr.Status.GPUReset != nil {
		// With DRA, the scheduler must not hand the GPU out again while
		// its pods leave: its device is tainted before the first eviction
		// (finish removes the rule).
		effect := resourcev1.DeviceTaintEffect(p.Spec.GPUReset.DeviceTaintEffect)
		if _, err := taintGPUDevices(ctx, r.client, r.reader, nr, nr.Status.GPUReset.GPUs, effect); err != nil {
			return ctrl.Result{}, false, err
		}
		scope, err := r.planDrain(ctx, in)
		if err != nil {
			return ctrl.Result{}, false, err
		}
		// Told before the write, whose answer may be lost when it lands.
		r.recordDrainScope(ctx, in, scope)
	}
	r.setCondition(in, v1alpha1.ConditionAdmitted, metav1.ConditionTrue, v1alpha1.ReasonAdmitted,
		fmt.Sprintf("%d of %d nodes unhealthy; %d in flight", view.unhealthy, view.matched, active))
	if err := r.setPhase(ctx, in, phase, reason, msg); err != nil {
		// An error the API server did not answer (a timeout) may hide a
		// write that landed: keep the slot counted until the cache shows
		// the outcome. A refusal from the server means nothing changed.
		var status apierrors.APIStatus
		admitted = !errors.As(err, &status)
		return ctrl.Result{}, false, err
	}
	admitted = true
	return ctrl.Result{}, true, nil
}

func (r *remediationReconciler) reserveSlot(ctx context.Context, in *incident) (ctrl.Result, bool, fleetView, int, error) {
	p := in.policy
	r.admitMu.Lock()
	defer r.admitMu.Unlock()
	view, err := r.fleet.view(ctx, p)
	if err != nil {
		return ctrl.Result{}, false, view, 0, err
	}
	if msg, err := r.causeHeld(ctx, in, view.matched); err != nil {
		return ctrl.Result{}, false, view, 0, err
	} else if msg != "" {
		res, err := r.hold(ctx, in, v1alpha1.ConditionAdmitted, metav1.ConditionFalse, v1alpha1.ReasonCauseBreakerOpen, msg, 5*r.poll)
		return res, false, view, 0, err
	}
	if view.breakerOpen() {
		res, err := r.hold(ctx, in, v1alpha1.ConditionAdmitted, metav1.ConditionFalse, v1alpha1.ReasonBreakerOpen, view.breakerMessage(), 5*r.poll)
		return res, false, view, 0, err
	}
	active, err := r.slots.active(ctx, r.client, p.Name, in.nr.Name)
	if err != nil {
		return ctrl.Result{}, false, view, 0, err
	}
	if limit := p.maxParallel(view.matched); active >= limit {
		res, err := r.hold(ctx, in, v1alpha1.ConditionAdmitted, metav1.ConditionFalse, v1alpha1.ReasonMaxParallel,
			fmt.Sprintf("%d remediations in flight, maxParallel is %d", active, limit), r.poll)
		return res, false, view, active, err
	}
	r.slots.admitted(p.Name, in.nr.Name)
	return ctrl.Result{}, true, view, active, nil
}

// hold keeps the incident in Pending with a condition saying why, writing
// only when the condition changed, and looks again after a while.
func (r *remediationReconciler) hold(ctx context.Context, in *incident, cond string, s metav1.ConditionStatus, reason, msg string, after time.Duration) (ctrl.Result, error) {
	// Only a new reason is written: a breaker message's counts change with
	// the fleet, and rewriting a thousand held incidents for each would
	// load the API server when it is busiest. (A condition on the stored
	// object was written together with the Pending phase.)
	if c := meta.FindStatusCondition(in.nr.Status.Conditions, cond); c != nil && c.Status == s && c.Reason == reason {
		return ctrl.Result{RequeueAfter: after}, nil
	}
	if r.setCondition(in, cond, s, reason, msg) {
		if err := r.client.Status().Update(ctx, in.nr); err != nil {
			return ctrl.Result{}, fmt.Errorf("recording %s on %s: %w", reason, in.nr.Name, err)
		}
		r.recorder.Eventf(in.nr, nil, corev1.EventTypeNormal, reason, "Hold", "%s", msg)
		kind := audit.Held
		if cond == v1alpha1.ConditionDryRun {
			kind = audit.DryRun
		}
		rec := r.audit.record(in, kind, string(kind)+"/"+reason, 0)
		rec.Reason, rec.Message = reason, msg
		r.audit.write(ctx, rec)
	}
	return ctrl.Result{RequeueAfter: after}, nil
}

// dryRunPlan says in words what the incident would do.
func (r *remediationReconciler) dryRunPlan(ctx context.Context, in *incident) string {
	if in.nr.Status.Action == v1alpha1.ActionResetGPU && in.nr.Status.GPUReset != nil {
		return r.resetPlan(ctx, in)
	}
	evict := "the node's pods"
	if in.node != nil {
		if plan, err := r.planDrain(ctx, in); err == nil {
			evict = fmt.Sprintf("%d pods (%d DaemonSet or mirror pods stay)", len(plan.evict), plan.skipped)
		}
	}
	plan := fmt.Sprintf("would cordon %s, evict %s, then %s it through provider %s",
		in.nr.Spec.NodeName, evict, in.nr.Status.Action, r.providerName(in))
	if c := providerNotReady(in.policy); c != nil {
		plan += fmt.Sprintf("; but live, it would wait: the provider is not ready (%s): %s", c.Reason, c.Message)
	}
	return plan
}

// providerNotReady returns the policy's ProviderReady condition when it is
// False for a reason that holds incidents (holdsIncidents). A policy not
// yet checked (no condition) is not held: the preflight runs within
// seconds of the controller's start.
func providerNotReady(p *policy) *metav1.Condition {
	if c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionProviderReady); c != nil && c.Status == metav1.ConditionFalse && holdsIncidents(p, c.Reason) {
		return c
	}
	return nil
}

// holdsIncidents says whether a failed preflight holds the policy's new
// incidents. What one node controls must not: nodes in no Auto Scaling
// group can still be rebooted (only their replace fails, node by node),
// and a provider guessed from a node's own labels or providerID that is
// not configured fails that node's incident alone. Otherwise a node could
// stop its whole policy by how it registers.
func holdsIncidents(p *policy, reason string) bool {
	switch reason {
	case v1alpha1.ReasonNotInAutoScalingGroup:
		return false
	case v1alpha1.ReasonProviderNotConfigured:
		return p.Spec.Provider != ""
	}
	return true
}

// olderOpenIncident returns the name of another open incident of the same
// node created before this one; the older one wins. The incident opener
// already never opens two (see nodeReconciler.opened); this is the second
// line of defence, for incidents made by hand or by an older controller.
func (r *remediationReconciler) olderOpenIncident(ctx context.Context, in *incident) (string, error) {
	items, err := incidentsOf(ctx, r.client, in.nr.Spec.NodeName)
	if err != nil {
		return "", err
	}
	for _, it := range items {
		if it.Name == in.nr.Name || it.Status.Phase.Terminal() {
			continue
		}
		if it.CreationTimestamp.Before(&in.nr.CreationTimestamp) ||
			(it.CreationTimestamp.Equal(&in.nr.CreationTimestamp) && it.Name < in.nr.Name) {
			return it.Name, nil
		}
	}
	return "", nil
}

// cancelIfMoot ends an incident that has not acted yet when another
// remediator is acting on the node (otherRemediator), or when its reason is
// gone: the node was deleted, opted out, or recovered and stayed healthy for
// the policy's recovery hold. A node we cordoned is uncordoned.
func (r *remediationReconciler) cancelIfMoot(ctx context.Context, in *incident) (bool, ctrl.Result, error) {
	switch {
	case in.node == nil:
		return true, ctrl.Result{}, r.finish(ctx, in, v1alpha1.PhaseCancelled, v1alpha1.ReasonNodeDeleted, "the node no longer exists")
	case optedOut(in.node):
		if err := r.uncordon(ctx, in); err != nil {
			return true, ctrl.Result{}, err
		}
		return true, ctrl.Result{}, r.finish(ctx, in, v1alpha1.PhaseCancelled, v1alpha1.ReasonOptedOut, "node annotated "+v1alpha1.AnnotationRemediation+"="+v1alpha1.RemediationDisabled)
	}
	if who, err := r.otherRemediator(ctx, in.node); err != nil || who != "" {
		if err != nil {
			return true, ctrl.Result{}, err
		}
		// Only our own cordon is undone (undoCordon keeps one that was
		// there before ours); theirs stays, and so does their repair.
		if err := r.uncordon(ctx, in); err != nil {
			return true, ctrl.Result{}, err
		}
		return true, ctrl.Result{}, r.finish(ctx, in, v1alpha1.PhaseCancelled, v1alpha1.ReasonOtherRemediator,
			who+"; gpuheal stands down and leaves the node to it")
	}
	healthySince, healthy := r.healthySince(in)
	if !healthy {
		return false, ctrl.Result{}, nil
	}
	if wait := healthySince.Add(in.policy.Spec.RecoveryHold.Duration).Sub(r.clock.Now()); wait > 0 {
		return true, ctrl.Result{RequeueAfter: wait}, nil
	}
	if err := r.uncordon(ctx, in); err != nil {
		return true, ctrl.Result{}, err
	}
	return true, ctrl.Result{}, r.finish(ctx, in, v1alpha1.PhaseCancelled, v1alpha1.ReasonRecovered,
		fmt.Sprintf("the node recovered on its own and stayed healthy for %s", in.policy.Spec.RecoveryHold.Duration))
}

// healthySince reports whether the node shows none of the policy's
// unhealthy conditions, and since when (the latest transition among them).
func (r *remediationReconciler) healthySince(in *incident) (time.Time, bool) {
	if in.node == nil || in.policy.unhealthyNow(in.node) != nil {
		return time.Time{}, false
	}
	var since time.Time
	for _, uc := range in.policy.Spec.UnhealthyConditions {
		if c := findCondition(in.node, uc.Type); c != nil && c.LastTransitionTime.After(since) {
			since = c.LastTransitionTime.Time
		}
	}
	return since, true
}
