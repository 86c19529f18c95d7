package remediation

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/audit"
	"github.com/gpuheal/gpuheal/internal/finding"
)

// The single-GPU reset (docs/remediation.md, "Resetting one GPU"): the
// controller decides it from the agent's fault report, evicts only the
// pods that hold the faulty GPUs when it can tell them apart, asks the
// node's agent for the reset in status.gpuReset and waits for its answer
// on the node. Anything short of a verified reset falls back to a reboot.

// resetDecision is what start() makes of the action ResetGPU.
type resetDecision struct {
	action v1alpha1.Action
	why    string
	status *v1alpha1.GPUResetStatus // the GPUs and the drain scope, for ResetGPU
	bad    error                    // the fault report could not be read
}

// decideReset checks that the agent's fault report names GPUs a reset
// repairs, and nothing worse: a GPU that needs a reboot or a replacement
// makes the whole node's repair that.
func (r *remediationReconciler) decideReset(in *incident) resetDecision {
	if in.node == nil {
		return resetDecision{action: v1alpha1.ActionReboot, why: "the node is gone, no GPU can be reset"}
	}
	raw, ok := in.node.Annotations[v1alpha1.AnnotationGPUFaults]
	if !ok {
		return resetDecision{action: v1alpha1.ActionReboot,
			why: "instead of ResetGPU: the node's agent reports no faulty GPU (no annotation " + v1alpha1.AnnotationGPUFaults + ")"}
	}
	rep, err := parseGPUFaults(raw)
	if err != nil {
		return resetDecision{action: v1alpha1.ActionReboot, why: fmt.Sprintf("instead of ResetGPU: %v", err), bad: err}
	}
	reset, reboot, replace := byAction(rep.GPUs)
	switch {
	case len(replace) > 0:
		return resetDecision{action: v1alpha1.ActionReplace, why: "instead of ResetGPU: " + faultNames(replace) + " needs a replacement"}
	case len(reboot) > 0:
		return resetDecision{action: v1alpha1.ActionReboot, why: "instead of ResetGPU: " + faultNames(reboot) + " needs a reboot"}
	case len(reset) == 0:
		return resetDecision{action: v1alpha1.ActionReboot, why: "instead of ResetGPU: the agent's fault report lists no GPU a reset repairs"}
	}
	st := &v1alpha1.GPUResetStatus{}
	for _, g := range reset {
		st.GPUs = append(st.GPUs, g.GPURef)
	}
	st.PartialDrain, st.DrainScope = drainScope(in.policy, reset)
	return resetDecision{action: v1alpha1.ActionResetGPU, status: st,
		why: fmt.Sprintf("for %s, a fault a GPU reset repairs; %s", faultNames(reset), st.DrainScope)}
}

// byAction sorts a fault report's GPUs by the repair each needs.
func byAction(gpus []v1alpha1.GPUFault) (reset, reboot, replace []v1alpha1.GPUFault) {
	for _, g := range gpus {
		switch finding.Action(g.Action) {
		case finding.ActionReplace:
			replace = append(replace, g)
		case finding.ActionReboot:
			reboot = append(reboot, g)
		case finding.ActionResetGPU:
			reset = append(reset, g)
		}
	}
	return reset, reboot, replace
}

// outgrown says, while the incident drains for, waits on or verifies a
// reset, whether the agent's report now names a GPU that needs more than
// a reset (a second fault, on another GPU or the same): the reset cannot
// repair the node, and it goes to a reboot, or a replacement when advised,
// at once instead of after the reset's timeout.
func outgrown(in *incident) (replace bool, why string) {
	if in.node == nil || in.nr.Status.Action != v1alpha1.ActionResetGPU {
		return false, ""
	}
	raw, ok := in.node.Annotations[v1alpha1.AnnotationGPUFaults]
	if !ok {
		return false, ""
	}
	rep, err := parseGPUFaults(raw)
	if err != nil {
		return false, "" // the answer and the Verifying wait decide
	}
	_, reboot, repl := byAction(rep.GPUs)
	switch {
	case len(repl) > 0:
		return true, faultNames(repl) + " now needs a replacement, which a GPU reset cannot give"
	case len(reboot) > 0:
		return false, faultNames(reboot) + " now needs a reboot, which a GPU reset cannot give"
	}
	return false, ""
}

// drainScope says whether the reset may evict only the GPUs' own pods:
// the policy allows it and every GPU is handed whole to its pods, as the
// agent read them from the kubelet. Otherwise the other pods of the node
// may be using the GPU too, and the whole node is drained.
func drainScope(p *policy, gpus []v1alpha1.GPUFault) (bool, string) {
	if !*p.Spec.GPUReset.PartialDrain {
		return false, "the whole node is drained: policy " + p.Name + " sets spec.gpuReset.partialDrain to false"
	}
	var pods []string
	for _, g := range gpus {
		switch {
		case g.PodsError != "":
			return false, fmt.Sprintf("the whole node is drained: the agent could not tell which pods hold GPU %d (%s)", g.Index, truncate(g.PodsError, 256))
		case g.Sharing != v1alpha1.GPUSharingExclusive:
			return false, fmt.Sprintf("the whole node is drained: GPU %d is shared (%s), so its pods cannot be told apart", g.Index, g.Sharing)
		}
		pods = append(pods, g.Pods...)
	}
	if len(pods) == 0 {
		return true, "only the faulty GPUs' pods are evicted, and they hold none; the node stays schedulable"
	}
	return true, fmt.Sprintf("only the pods holding the faulty GPUs are evicted (%s); the node stays schedulable", strings.Join(firstN(pods, 5), ", "))
}

func faultNames(gs []v1alpha1.GPUFault) string {
	var out []string
	for _, g := range gs {
		s := gpuNames([]v1alpha1.GPURef{g.GPURef})
		if g.Reason != "" {
			s += " " + truncate(g.Reason, 64)
		}
		out = append(out, s)
	}
	return strings.Join(out, ", ")
}

// partialDrain reports whether the incident evicts only its GPUs' pods.
func partialDrain(in *incident) bool {
	st := in.nr.Status
	return st.Action == v1alpha1.ActionResetGPU && st.GPUReset != nil && st.GPUReset.PartialDrain
}

// resetPods are the pods the agent says hold the incident's GPUs, from
// its current report: a pod that took one of them since the decision is
// evicted too. A report that can no longer be read, or that no longer
// lists a GPU whole, names no new pod: those already evicted stay evicted
// and the agent's reset refuses a GPU still in use.
func resetPods(in *incident) map[string]bool {
	pods := map[string]bool{}
	rep, err := parseGPUFaults(in.node.Annotations[v1alpha1.AnnotationGPUFaults])
	if err != nil || in.nr.Status.GPUReset == nil {
		return pods
	}
	for _, ref := range in.nr.Status.GPUReset.GPUs {
		for _, f := range rep.GPUs {
			if sameGPU(ref, f) && f.Sharing == v1alpha1.GPUSharingExclusive && f.PodsError == "" {
				for _, p := range f.Pods {
					pods[p] = true
				}
			}
		}
	}
	return pods
}

// recordDrainScope tells, once the drain's scope is written, what the
// reset drains and why: an Event on the incident and the node and an
// audit record. Pods the report lists that are not on the node are named
// (the report is untrusted: they are left alone).
func (r *remediationReconciler) recordDrainScope(ctx context.Context, in *incident, plan drainPlan) {
	g := in.nr.Status.GPUReset
	reason := v1alpha1.ReasonWholeNodeDrain
	if g.PartialDrain {
		reason = v1alpha1.ReasonPartialDrain
	}
	msg := g.DrainScope
	if len(plan.notHere) > 0 {
		msg += fmt.Sprintf("; listed by the agent but not on node %s, left alone: %s", in.nr.Spec.NodeName, strings.Join(firstN(plan.notHere, 5), ", "))
		log.FromContext(ctx).Info("the agent's fault report lists pods that are not on its node; ignoring them", "remediation", in.nr.Name, "pods", plan.notHere)
	}
	r.recorder.Eventf(in.nr, in.node, corev1.EventTypeNormal, reason, "Drain", "%s", msg)
	r.recorder.Eventf(in.node, in.nr, corev1.EventTypeNormal, reason, "Drain", "%s: %s", in.nr.Name, msg)
	rec := r.audit.record(in, audit.DrainScoped, string(audit.DrainScoped), int(in.nr.Status.Attempts))
	rec.Reason, rec.Message, rec.GPUs = reason, msg, refUUIDs(g.GPUs)
	r.audit.write(ctx, rec)
}

// resetRequestID is the request's ID: one per incident and attempt, so a
// controller that restarts asks again under the same ID, which the agent
// answers once.
func resetRequestID(nr *v1alpha1.NodeRemediation) string {
	return fmt.Sprintf("%s-reset-%d", nr.Name, nr.Status.Attempts)
}

// requestReset asks the node's agent for the reset: the request and the
// phase Resetting go in one status write, and the agent acts only on a
// request with requestedAt.
func (r *remediationReconciler) requestReset(ctx context.Context, in *incident) (ctrl.Result, error) {
	st := &in.nr.Status
	if st.GPUReset == nil || len(st.GPUReset.GPUs) == 0 {
		return r.escalateReset(ctx, in, "the incident records no GPU to reset")
	}
	st.Attempts++
	g := st.GPUReset
	g.RequestID = resetRequestID(in.nr)
	now := metav1.NewTime(r.clock.Now())
	g.RequestedAt = &now
	msg := fmt.Sprintf("asking the agent of node %s to reset %s (request %s)", in.nr.Spec.NodeName, gpuNames(g.GPUs), g.RequestID)
	// Recorded before the write, as Detected is before the incident: a
	// write whose answer is lost may have landed, and the next controller
	// only waits. A write that did not land is made again with the same
	// ID, which the record's key names once.
	rec := r.audit.record(in, audit.ResetRequested, string(audit.ResetRequested), int(st.Attempts))
	rec.RequestID, rec.GPUs, rec.Time, rec.Phase, rec.Message = g.RequestID, refUUIDs(g.GPUs), now.Time, string(v1alpha1.PhaseResetting), msg
	r.audit.write(ctx, rec)
	if err := r.setPhase(ctx, in, v1alpha1.PhaseResetting, v1alpha1.ReasonResetting, msg); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: in.policy.Spec.GPUReset.Timeout.Duration}, nil
}

// resetting waits for the agent's answer to the request, bounded by the
// policy's spec.gpuReset.timeout. The request is never written again: a
// controller that restarts finds it in the status and waits on.
func (r *remediationReconciler) resetting(ctx context.Context, in *incident) (ctrl.Result, error) {
	g := in.nr.Status.GPUReset
	if g == nil || g.RequestID == "" || g.RequestedAt == nil {
		return r.escalateReset(ctx, in, "the incident is Resetting without a recorded request")
	}
	if _, why := outgrown(in); why != "" {
		return r.escalateReset(ctx, in, why)
	}
	if in.node != nil {
		rep, problem := resetAnswer(in.node, g)
		switch {
		case problem != "":
			r.recorder.Eventf(in.nr, in.node, corev1.EventTypeWarning, v1alpha1.EventReasonBadGPUReset, "Reset", "%s", problem)
			return r.resetFinished(ctx, in, &v1alpha1.GPUResetReport{Outcome: v1alpha1.GPUResetFailed,
				Reason: v1alpha1.ResetReasonError, Message: problem})
		case rep != nil:
			return r.resetFinished(ctx, in, rep)
		}
	}
	if done, res, err := r.cancelIfMoot(ctx, in); done {
		return res, err
	}
	timeout := in.policy.Spec.GPUReset.Timeout.Duration
	if wait := g.RequestedAt.Add(timeout).Sub(r.clock.Now()); wait >= 0 {
		return ctrl.Result{RequeueAfter: max(wait, r.poll)}, nil
	}
	return r.resetFinished(ctx, in, &v1alpha1.GPUResetReport{Outcome: v1alpha1.GPUResetFailed, Reason: v1alpha1.ResetReasonTimeout,
		Message: fmt.Sprintf("no answer from the agent of node %s within %s", in.nr.Spec.NodeName, timeout)})
}

// resetAnswer is the agent's final answer to request g, or nil while there
// is none (no annotation, an answer to another request, Running), or a
// problem: the annotation is unreadable, or answers g's ID about other
// GPUs.
func resetAnswer(n *corev1.Node, g *v1alpha1.GPUResetStatus) (*v1alpha1.GPUResetReport, string) {
	raw, ok := n.Annotations[v1alpha1.AnnotationGPUReset]
	if !ok {
		return nil, ""
	}
	rep, err := parseGPUReset(raw)
	switch {
	case err != nil:
		return nil, fmt.Sprintf("the agent's answer on node %s cannot be read: %v", n.Name, err)
	case rep.RequestID != g.RequestID:
		return nil, "" // an earlier request's answer, or not yet taken
	case !sameGPUs(g.GPUs, rep.GPUs):
		return nil, fmt.Sprintf("the agent's answer on node %s to request %s is about %s, not the requested %s",
			n.Name, truncate(g.RequestID, 253), truncate(gpuNames(rep.GPUs), 256), gpuNames(g.GPUs))
	case rep.Outcome == v1alpha1.GPUResetRunning:
		return nil, ""
	}
	return rep, ""
}

// maxResetSteps bounds the steps copied from an answer into the status.
const maxResetSteps = 32

// resetFinished copies the answer into the status, then goes on: a
// Succeeded reset to Verifying, anything else to a reboot. Metrics, the
// audit record and the Events follow the write, so a conflict that
// repeats the step counts it once.
func (r *remediationReconciler) resetFinished(ctx context.Context, in *incident, rep *v1alpha1.GPUResetReport) (ctrl.Result, error) {
	g := in.nr.Status.GPUReset
	now := metav1.NewTime(r.clock.Now())
	g.Outcome, g.Reason, g.Message = rep.Outcome, truncate(rep.Reason, 64), truncate(rep.Message, 1024)
	g.Steps = nil
	for _, s := range rep.Steps[:min(len(rep.Steps), maxResetSteps)] {
		s.Name, s.Message = truncate(s.Name, 64), truncate(s.Message, 512)
		g.Steps = append(g.Steps, s)
	}
	g.FinishedAt = rep.FinishedAt
	if g.FinishedAt == nil {
		g.FinishedAt = &now
	}
	took := now.Sub(g.RequestedAt.Time)
	ok := rep.Outcome == v1alpha1.GPUResetSucceeded
	msg := fmt.Sprintf("the agent reset %s; waiting for the node to be healthy for %s and the GPUs to leave its fault report",
		gpuNames(g.GPUs), in.policy.Spec.RecoveryHold.Duration)
	reason, sev, evType := v1alpha1.GPUResetSucceeded, audit.SeverityInfo, corev1.EventTypeNormal
	if !ok {
		msg = fmt.Sprintf("the reset of %s failed (%s): %s", gpuNames(g.GPUs), orNone(g.Reason), g.Message)
		reason, sev, evType = resetReasonLabel(g.Reason), audit.SeverityWarning, corev1.EventTypeWarning
	}
	// The record goes first: a write whose answer is lost has landed, and
	// the next controller goes on from the phase it finds.
	rec := r.audit.record(in, audit.ResetFinished, string(audit.ResetFinished), int(in.nr.Status.Attempts))
	rec.RequestID, rec.GPUs, rec.Reason, rec.Severity, rec.Duration = g.RequestID, refUUIDs(g.GPUs), reason, sev, took
	rec.Message = truncate(msg+stepsNote(g.Steps), 4096)
	r.audit.write(ctx, rec)
	var res ctrl.Result
	var err error
	if ok {
		err = r.setPhase(ctx, in, v1alpha1.PhaseVerifying, v1alpha1.ReasonGPUReset, msg)
	} else {
		res, err = r.escalateReset(ctx, in, msg)
	}
	if err != nil {
		return res, err
	}
	gpuResets.WithLabelValues(g.Outcome, resetReasonLabel(g.Reason)).Inc()
	gpuResetDuration.WithLabelValues(g.Outcome).Observe(took.Seconds())
	r.recorder.Eventf(in.node, in.nr, evType, resetEventReason(g.Outcome), "Reset", "%s: %s", in.nr.Name, msg)
	return res, nil
}

func resetEventReason(outcome string) string {
	if outcome == v1alpha1.GPUResetSucceeded {
		return v1alpha1.ReasonGPUReset
	}
	return v1alpha1.ReasonResetFailed
}

// knownResetReasons are the reasons a metric label may take; the agent
// is untrusted, and a label it could choose freely would let one node
// make the controller's metrics grow without end.
var knownResetReasons = []string{v1alpha1.ResetReasonInUse, v1alpha1.ResetReasonPrimaryGPU, v1alpha1.ResetReasonNotSupported,
	v1alpha1.ResetReasonNotFound, v1alpha1.ResetReasonTimeout, v1alpha1.ResetReasonFaultRemains, v1alpha1.ResetReasonInterrupted,
	v1alpha1.ResetReasonFabric, v1alpha1.ResetReasonRefused, v1alpha1.ResetReasonError}

func resetReasonLabel(reason string) string {
	switch {
	case reason == "":
		return "None"
	case slices.Contains(knownResetReasons, reason):
		return reason
	}
	return "Other"
}

// stepsNote lists the agent's steps for the audit record.
func stepsNote(steps []v1alpha1.GPUResetStep) string {
	if len(steps) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("; steps:")
	for _, s := range steps {
		ok := "ok"
		if !s.OK {
			ok = "failed"
		}
		fmt.Fprintf(&b, " %s %s", s.Name, ok)
		if s.Message != "" {
			fmt.Fprintf(&b, " (%s)", s.Message)
		}
		b.WriteString(";")
	}
	return strings.TrimSuffix(b.String(), ";")
}

// escalateReset gives up on the reset: the node is cordoned, drained whole
// and rebooted (or replaced, when it was rebooted too often already, as a
// new incident would be) by the usual path. drained() counts the reboot as
// the incident's next attempt.
func (r *remediationReconciler) escalateReset(ctx context.Context, in *incident, why string) (ctrl.Result, error) {
	if in.node == nil {
		return ctrl.Result{}, r.finish(ctx, in, v1alpha1.PhaseCancelled, v1alpha1.ReasonNodeDeleted, "the node no longer exists")
	}
	st := &in.nr.Status
	action, how, err := r.rebootOrReplace(ctx, in)
	if err != nil {
		return ctrl.Result{}, err
	}
	if err := r.cordon(ctx, in); err != nil {
		return ctrl.Result{}, err
	}
	st.Action = action
	msg := fmt.Sprintf("%s; cordoning and draining the node to %s it%s", why, strings.ToLower(string(action)), how)
	rec := r.audit.record(in, audit.Escalated, string(audit.Escalated), int(st.Attempts)+1)
	rec.Action, rec.Reason, rec.Severity = string(action), v1alpha1.ReasonResetFailed, audit.SeverityWarning
	rec.Message = msg
	if st.GPUReset != nil {
		rec.GPUs = refUUIDs(st.GPUReset.GPUs)
	}
	r.audit.write(ctx, rec) // before the write, as verifying's escalation does
	if err := r.setPhase(ctx, in, v1alpha1.PhaseCordoned, v1alpha1.ReasonResetFailed, msg); err != nil {
		return ctrl.Result{}, err
	}
	return r.cordoned(ctx, in)
}

// rebootOrReplace is Reboot, or Replace when the node's other incidents
// rebooted it the policy's rebootsBeforeReplace times within its window;
// how says so.
func (r *remediationReconciler) rebootOrReplace(ctx context.Context, in *incident) (v1alpha1.Action, string, error) {
	if replace, why := outgrown(in); replace {
		return v1alpha1.ActionReplace, " (" + why + ")", nil
	}
	p := in.policy
	items, err := incidentsOf(ctx, r.client, in.nr.Spec.NodeName)
	if err != nil {
		return "", "", err
	}
	if n := rebootsWithin(items, in.nr.Name, r.clock.Now().Add(-p.Spec.Escalation.Window.Duration)); n >= int(p.Spec.Escalation.RebootsBeforeReplace) {
		return v1alpha1.ActionReplace, fmt.Sprintf(" (escalated: rebooted %d times within %s)", n, p.Spec.Escalation.Window.Duration), nil
	}
	return v1alpha1.ActionReboot, "", nil
}

// resetVerifying waits, after the agent's Succeeded, for the node to show
// none of the policy's unhealthy conditions for the recovery hold and for
// the reset GPUs to leave its fault report. A node that does not get there
// within spec.gpuReset.timeout past the hold is rebooted.
func (r *remediationReconciler) resetVerifying(ctx context.Context, in *incident) (ctrl.Result, error) {
	if in.node == nil {
		return ctrl.Result{}, r.finish(ctx, in, v1alpha1.PhaseCancelled, v1alpha1.ReasonNodeDeleted, "the node was deleted after its GPU reset")
	}
	g := in.nr.Status.GPUReset
	if _, why := outgrown(in); why != "" {
		return r.escalateReset(ctx, in, why)
	}
	healthy, wait := r.healthyFor(in)
	listed := stillListed(in.node, g.GPUs)
	if healthy && listed == "" {
		msg := fmt.Sprintf("%s reset; the node is healthy", gpuNames(g.GPUs))
		if in.node.Annotations[v1alpha1.AnnotationCordonedBy] == in.nr.Name {
			msg += " and uncordoned"
		}
		if err := r.uncordon(ctx, in); err != nil {
			return ctrl.Result{}, err
		}
		restarted, err := r.restartDevicePlugin(ctx, in)
		if err != nil {
			return ctrl.Result{}, err
		}
		msg += devicePluginNote(restarted)
		r.recovered(ctx, in, in.nr.Spec.NodeName)
		return ctrl.Result{}, r.finish(ctx, in, v1alpha1.PhaseSucceeded, v1alpha1.ReasonGPUReset, msg)
	}
	limit := in.policy.Spec.RecoveryHold.Duration + in.policy.Spec.GPUReset.Timeout.Duration
	if since := r.clock.Since(enteredAt(in.nr, v1alpha1.PhaseVerifying)); since > limit {
		why := "the node still shows an unhealthy condition"
		if listed != "" {
			why = listed
		}
		return r.escalateReset(ctx, in, fmt.Sprintf("the agent reported %s reset, but %s %s later", gpuNames(g.GPUs), why, limit))
	}
	if wait > 0 {
		return ctrl.Result{RequeueAfter: min(wait, r.poll)}, nil
	}
	return ctrl.Result{RequeueAfter: r.poll}, nil
}

// stillListed says which reset GPU the node's fault report still names,
// or "" when none does (or the report is gone). An unreadable report
// proves nothing healed.
func stillListed(n *corev1.Node, gpus []v1alpha1.GPURef) string {
	raw, ok := n.Annotations[v1alpha1.AnnotationGPUFaults]
	if !ok {
		return ""
	}
	rep, err := parseGPUFaults(raw)
	if err != nil {
		return err.Error()
	}
	for _, ref := range gpus {
		for _, f := range rep.GPUs {
			if sameGPU(ref, f) {
				return fmt.Sprintf("the agent's fault report still lists GPU %d (%s)", f.Index, truncate(f.Reason, 64))
			}
		}
	}
	return ""
}

// resetPlan says in words what a reset incident would do (dry run).
func (r *remediationReconciler) resetPlan(ctx context.Context, in *incident) string {
	g := in.nr.Status.GPUReset
	if !g.PartialDrain {
		return fmt.Sprintf("would cordon %s and drain it whole (%s), then ask its agent to reset %s",
			in.nr.Spec.NodeName, g.DrainScope, gpuNames(g.GPUs))
	}
	pods := "no pod"
	if in.node != nil {
		if plan, err := r.planDrain(ctx, in); err == nil && len(plan.evict) > 0 {
			var names []string
			for _, p := range plan.evict {
				names = append(names, p.Namespace+"/"+p.Name)
			}
			pods = "pods " + strings.Join(firstN(names, 8), ", ")
		}
	}
	return fmt.Sprintf("would reset %s after evicting %s, without cordoning %s", gpuNames(g.GPUs), pods, in.nr.Spec.NodeName)
}

// refUUIDs are the GPUs' UUIDs, for audit records.
func refUUIDs(gpus []v1alpha1.GPURef) []string {
	var out []string
	for _, g := range gpus {
		if g.UUID != "" {
			out = append(out, truncate(g.UUID, 64))
		}
	}
	return out
}

// resetDurationBuckets: a reset takes seconds; the timeout is minutes.
var resetDurationBuckets = []float64{1, 2.5, 5, 10, 20, 30, 60, 90, 120, 180, 300, 600}
