package remediation

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/audit"
	"github.com/gpuheal/gpuheal/internal/nodemark"
)

// The health gate's Validating phase. A node the reboot healed (or the
// replacement that came instead) stays out of service, tainted
// TaintValidating, while the policy's checks run one after another. The
// results in the incident's status are the record: each check is started
// once and judged once per attempt, so a restarted controller goes on
// where the last one stopped and never runs a finished check again.

// gated reports whether the policy puts repaired nodes through the gate.
func gated(in *incident) bool {
	v := in.policy.Spec.Validation
	return v != nil && len(v.Checks) > 0
}

// startValidating taints node (the incident's own, or its replacement)
// and enters Validating; the caller has seen it Ready and healthy.
func (r *remediationReconciler) startValidating(ctx context.Context, in *incident, node *corev1.Node, why string) error {
	if err := r.setValidatingTaint(ctx, node, true); err != nil {
		return err
	}
	return r.setPhase(ctx, in, v1alpha1.PhaseValidating, v1alpha1.ReasonValidating,
		fmt.Sprintf("%s; node %s stays out of service until it passes %s", why, node.Name, checkNames(in.policy.Spec.Validation.Checks)))
}

// validatedNode is the node under test: the replacement after a replace,
// else the incident's own.
func validatedNode(nr *v1alpha1.NodeRemediation) string {
	if nr.Status.Action == v1alpha1.ActionReplace && nr.Status.Replacement != "" {
		return nr.Status.Replacement
	}
	return nr.Spec.NodeName
}

// validating runs the checks in order; a check judged moves on to the next.
func (r *remediationReconciler) validating(ctx context.Context, in *incident) (ctrl.Result, error) {
	st := &in.nr.Status
	name := validatedNode(in.nr)
	replaced := name != in.nr.Spec.NodeName
	node := in.node
	if replaced {
		var n corev1.Node
		switch err := r.client.Get(ctx, types.NamespacedName{Name: name}, &n); {
		case apierrors.IsNotFound(err):
			node = nil
		case err != nil:
			return ctrl.Result{}, err
		default:
			node = &n
		}
	}
	if node == nil {
		if err := r.deleteOpenCheckJobs(ctx, in, name, nil); err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{}, r.finish(ctx, in, v1alpha1.PhaseCancelled, v1alpha1.ReasonNodeDeleted, "node "+name+" was deleted while its checks ran")
	}
	// A verdict against the node in this attempt is final, whatever the
	// policy says now: a check renamed or dropped, or the policy gone,
	// never lets a node that failed back into service.
	for i := range st.Validation {
		if res := &st.Validation[i]; res.Node == name && res.Attempt == st.Attempts &&
			(res.Outcome == v1alpha1.CheckFailed || res.Outcome == v1alpha1.CheckError) {
			return ctrl.Result{}, r.validationFailed(ctx, in, node, res)
		}
	}
	if !gated(in) {
		return ctrl.Result{}, r.validationDropped(ctx, in, name)
	}
	checks := in.policy.Spec.Validation.Checks
	current := func(res v1alpha1.CheckResult) bool {
		return slices.ContainsFunc(checks, func(c v1alpha1.ValidationCheck) bool { return c.Name == res.Name })
	}
	if err := r.deleteOpenCheckJobs(ctx, in, name, current); err != nil {
		return ctrl.Result{}, err
	}
	var passed []string
	for _, c := range checks {
		i := slices.IndexFunc(st.Validation, func(res v1alpha1.CheckResult) bool {
			return res.Name == c.Name && res.Node == name && res.Attempt == st.Attempts
		})
		if i < 0 {
			res := v1alpha1.CheckResult{Name: c.Name, Kind: c.Kind, Node: name, Attempt: st.Attempts, Started: metav1.NewTime(r.clock.Now())}
			if c.Kind != v1alpha1.CheckAgent {
				res.Job = r.checks.Namespace + "/" + checkJobName(r.checkOwner(in), st.Attempts, c.Name)
			}
			st.Validation = append(st.Validation, res)
			if err := r.client.Status().Update(ctx, in.nr); err != nil {
				return ctrl.Result{}, err
			}
			i = len(st.Validation) - 1
		}
		res := &st.Validation[i]
		if res.Outcome == "" {
			wait, err := r.runCheck(ctx, in, node, c, res)
			if err != nil || wait > 0 {
				return ctrl.Result{RequeueAfter: wait}, err
			}
		}
		if res.Outcome != v1alpha1.CheckPassed {
			return ctrl.Result{}, r.validationFailed(ctx, in, node, res)
		}
		passed = append(passed, c.Name)
	}
	// A fault that surfaced while the checks ran is a failure too.
	if why := r.unhealthyNode(in, node); why != "" {
		now := metav1.NewTime(r.clock.Now())
		st.Validation = append(st.Validation, v1alpha1.CheckResult{Name: nodeHealthCheck, Kind: v1alpha1.CheckAgent, Node: name, Attempt: st.Attempts,
			Outcome: v1alpha1.CheckFailed, Value: truncate(why, 256), Floor: "Ready, none of the policy's unhealthy conditions",
			Started: now, Finished: &now, Message: truncate("the node became unhealthy while its checks ran: "+why, 1024)})
		return ctrl.Result{}, r.validationFailed(ctx, in, node, &st.Validation[len(st.Validation)-1])
	}
	return ctrl.Result{}, r.validationPassed(ctx, in, node, passed)
}

// nodeHealthCheck names the result that records a node found unhealthy
// once its checks had passed.
const nodeHealthCheck = "node-health"

// unhealthyNode says why node is not Ready and healthy by the policy, or
// is empty.
func (r *remediationReconciler) unhealthyNode(in *incident, node *corev1.Node) string {
	if !nodeReady(node) {
		return "node " + node.Name + " is not Ready"
	}
	if c := in.policy.unhealthyNow(node); c != nil {
		return fmt.Sprintf("node %s has %s=%s (%s)", node.Name, c.Type, c.Status, cleanLine(c.Reason, 128))
	}
	return ""
}

// validationDropped is the policy no longer validating while a node's
// checks ran: their Jobs go and the incident goes back to Verifying, which
// returns the node as without the gate (healthy for the recovery hold).
// A recorded failure was dealt with before: it is final.
func (r *remediationReconciler) validationDropped(ctx context.Context, in *incident, node string) error {
	if err := r.deleteOpenCheckJobs(ctx, in, node, nil); err != nil {
		return err
	}
	return r.setPhase(ctx, in, v1alpha1.PhaseVerifying, v1alpha1.ReasonVerifying,
		"policy "+in.policy.Name+" no longer validates nodes; node "+node+" returns once Ready and healthy for the recovery hold")
}

// deleteOpenCheckJobs deletes the Jobs of the node's checks of this
// attempt that have no verdict, but those keep says to keep (nil: none).
// The results of the checks deleted leave the status: they carry no
// verdict, and no check of that name runs any more.
func (r *remediationReconciler) deleteOpenCheckJobs(ctx context.Context, in *incident, node string, keep func(v1alpha1.CheckResult) bool) error {
	st := &in.nr.Status
	var kept []v1alpha1.CheckResult
	dropped := false
	for _, res := range st.Validation {
		if res.Node != node || res.Attempt != st.Attempts || res.Outcome != "" || (keep != nil && keep(res)) {
			kept = append(kept, res)
			continue
		}
		if err := r.deleteCheckJobRef(ctx, res.Job); err != nil {
			return err
		}
		dropped = true
	}
	if !dropped {
		return nil
	}
	st.Validation = kept
	if keep == nil {
		return nil // the caller's phase change writes the status
	}
	return r.client.Status().Update(ctx, in.nr)
}

// checkOwner names the incident in its check Jobs' names: its UID, which
// a later incident of the same name does not share.
func (r *remediationReconciler) checkOwner(in *incident) string {
	if in.nr.UID != "" {
		return string(in.nr.UID)
	}
	return in.nr.Name
}

// runCheck advances one check of the incident; it returns how soon to
// look again while the check runs, or 0 once res holds its outcome
// (written to the status). The verdict is saved before the Job is
// deleted: were the write lost, the Job is still there to judge again.
func (r *remediationReconciler) runCheck(ctx context.Context, in *incident, node *corev1.Node, c v1alpha1.ValidationCheck, res *v1alpha1.CheckResult) (time.Duration, error) {
	owner := checkJobOwner{purpose: v1alpha1.CheckPurposeRepair, incident: in.nr.Name, stillOpen: r.incidentCheckOpen(in, *res)}
	wait, err := r.stepCheck(ctx, node, c, res, owner)
	if err != nil || wait > 0 {
		return wait, err
	}
	if err := r.client.Status().Update(ctx, in.nr); err != nil {
		return 0, err
	}
	r.checkFinished(ctx, in, node, *res)
	r.dropCheckJob(ctx, res.Job)
	return 0, nil
}

// incidentCheckOpen re-reads the incident past the cache: a conflict
// unless it is still Validating with check res open, so that a reconcile
// of a stale cached incident never creates the Job of a judged check.
func (r *remediationReconciler) incidentCheckOpen(in *incident, res v1alpha1.CheckResult) func(context.Context) error {
	return func(ctx context.Context) error {
		var fresh v1alpha1.NodeRemediation
		if err := r.reader.Get(ctx, client.ObjectKeyFromObject(in.nr), &fresh); err != nil {
			return err
		}
		open := fresh.Status.Phase == v1alpha1.PhaseValidating && fresh.Status.Attempts == res.Attempt &&
			slices.ContainsFunc(fresh.Status.Validation, func(f v1alpha1.CheckResult) bool {
				return f.Name == res.Name && f.Node == res.Node && f.Attempt == res.Attempt && f.Outcome == ""
			})
		if !open {
			return apierrors.NewConflict(v1alpha1.GroupVersion.WithResource("noderemediations").GroupResource(), in.nr.Name,
				fmt.Errorf("check %s of attempt %d is no longer open: the cached incident is stale", res.Name, res.Attempt))
		}
		return nil
	}
}

// stepCheck advances check c on node for whoever runs it (an incident's
// gate, a join or an idle check): it returns how soon to look again while
// the check runs, or 0 once it has filled res's outcome, which the caller
// saves (and then deletes the Job). Errors count against the check's
// timeout too: a Job that can never be created ends as Error.
func (r *remediationReconciler) stepCheck(ctx context.Context, node *corev1.Node, c v1alpha1.ValidationCheck, res *v1alpha1.CheckResult, owner checkJobOwner) (time.Duration, error) {
	var got jobCheck
	_, reported := node.Annotations[v1alpha1.AnnotationAgentChecks]
	if c.Kind == v1alpha1.CheckAgent {
		raw := node.Annotations[v1alpha1.AnnotationAgentChecks]
		v := judgeAgentReport(raw, reported, res.Started.Time, node.Status.NodeInfo.BootID, c.AgentChecks)
		got = jobCheck{outcome: v.outcome, value: v.value, floor: v.floor, message: v.message, excerpt: v.excerpt, wait: v.pending}
	} else {
		var err error
		if got, err = r.runJobCheck(ctx, node, c, res, owner); err != nil {
			if apierrors.IsConflict(err) || r.clock.Since(res.Started.Time) < checkTimeout(c) {
				return 0, err
			}
			got = jobCheck{wait: "the last try failed: " + err.Error()}
		}
	}
	if got.outcome == "" {
		left := checkTimeout(c) - r.clock.Since(res.Started.Time)
		if left > 0 {
			return min(left, r.poll), nil
		}
		got.outcome = v1alpha1.CheckError
		got.message = fmt.Sprintf("no result within the check's timeout of %s: %s", checkTimeout(c), got.wait)
		if c.Kind == v1alpha1.CheckAgent && !reported {
			got.misconfigured = true
			got.message = fmt.Sprintf("node %s never reported its agent's checks (annotation %s) within the check's timeout of %s: "+
				"run gpuheal-agent on it with --agent-checks-interval above 0, or drop the Agent check from the policy",
				node.Name, v1alpha1.AnnotationAgentChecks, checkTimeout(c))
		}
		if c.Kind != v1alpha1.CheckAgent && !r.checkScheduled(ctx, res.Job, node.Name) {
			got.message = fmt.Sprintf("%s on %s within the check's timeout of %s", notScheduledPrefix, node.Name, checkTimeout(c))
		}
	}
	now := metav1.NewTime(r.clock.Now())
	res.Outcome, res.Value, res.Floor, res.Finished = got.outcome, truncate(got.value, 256), truncate(got.floor, 256), &now
	res.Message, res.Excerpt = truncate(got.message, 1024), excerptOf(got.excerpt, 2048)
	switch {
	case got.disrupted:
		res.Message = truncate(disruptedPrefix+res.Message, 1024)
	case got.misconfigured:
		res.Message = truncate(misconfiguredPrefix+res.Message, 1024)
	}
	return 0, nil
}

// checkFinished tells of a judged check: Events on the incident and the
// node, an audit record and the metrics.
func (r *remediationReconciler) checkFinished(ctx context.Context, in *incident, node *corev1.Node, res v1alpha1.CheckResult) {
	reason, kind, note, took := checkNote(res)
	r.recorder.Eventf(in.nr, node, kind, reason, string(v1alpha1.PhaseValidating), "%s", note)
	r.recorder.Eventf(node, in.nr, kind, reason, string(v1alpha1.PhaseValidating), "%s: %s", in.nr.Name, note)
	rec := r.audit.record(in, audit.CheckFinished, "check/"+res.Node+"/"+res.Name, int(res.Attempt))
	rec.Node, rec.Reason, rec.Message, rec.Duration = res.Node, string(res.Outcome), truncate(note, 2048), took
	if res.Outcome != v1alpha1.CheckPassed {
		rec.Severity = audit.SeverityWarning
	}
	r.audit.write(ctx, rec)
	countCheck(res.Kind, string(res.Outcome), took)
}

// checkNote is the Event of a judged check: its reason, type and note.
func checkNote(res v1alpha1.CheckResult) (reason, kind, note string, took time.Duration) {
	took = res.Finished.Sub(res.Started.Time)
	reason, kind = v1alpha1.EventReasonValidationPassed, corev1.EventTypeNormal
	if res.Outcome != v1alpha1.CheckPassed {
		reason, kind = v1alpha1.EventReasonValidationFailed, corev1.EventTypeWarning
	}
	note = fmt.Sprintf("check %s (%s) %s in %s: value %s, floor %s", res.Name, res.Kind, res.Outcome, took.Round(time.Second), orNone(res.Value), orNone(res.Floor))
	if res.Outcome != v1alpha1.CheckPassed {
		note += ": " + res.Message
	}
	return reason, kind, note, took
}

// countCheck counts a judged check in the metrics.
func countCheck(kind v1alpha1.CheckKind, outcome string, took time.Duration) {
	validationChecks.WithLabelValues(string(kind), outcome).Inc()
	validationCheckDuration.WithLabelValues(string(kind)).Observe(took.Seconds())
}

// validationPassed returns the node to service and ends the incident.
func (r *remediationReconciler) validationPassed(ctx context.Context, in *incident, node *corev1.Node, passed []string) error {
	stamp := r.clock.Now().UTC().Format(time.RFC3339)
	err := patchNodeGuarded(ctx, r.client, r.reader, node, func(n *corev1.Node) bool {
		had := removeValidatingTaint(n)
		if n.Annotations[v1alpha1.AnnotationValidatedAt] != "" && !had {
			return false // a repeat after a crash: already done
		}
		if n.Annotations == nil {
			n.Annotations = map[string]string{}
		}
		n.Annotations[v1alpha1.AnnotationValidatedAt] = stamp
		return true
	})
	if err != nil {
		return err
	}
	checks := "checks " + strings.Join(passed, ", ")
	if len(passed) == 0 {
		checks = "no checks (the policy has none now)"
	}
	if node.Name != in.nr.Spec.NodeName {
		r.recovered(ctx, in, node.Name)
		return r.finish(ctx, in, v1alpha1.PhaseSucceeded, v1alpha1.ReasonReplaced, "replacement node "+node.Name+" passed "+checks)
	}
	in.node = node
	if err := r.uncordon(ctx, in); err != nil {
		return err
	}
	r.recovered(ctx, in, node.Name)
	return r.finish(ctx, in, v1alpha1.PhaseSucceeded, v1alpha1.ReasonRecovered, "the node passed "+checks+" after the reboot; uncordoned")
}

// validationFailed keeps the node out of service: a rebooted node is
// replaced, a replacement is left cordoned and tainted for a person.
func (r *remediationReconciler) validationFailed(ctx context.Context, in *incident, node *corev1.Node, res *v1alpha1.CheckResult) error {
	st := &in.nr.Status
	what := fmt.Sprintf("check %s %s on %s (value %s, floor %s): %s", res.Name, res.Outcome, node.Name, orNone(res.Value), orNone(res.Floor), res.Message)
	if misconfigured(res) {
		// Replacing would not help: every node would fail the same way.
		in.node = node
		if err := r.cordon(ctx, in); err != nil {
			return err
		}
		if err := r.setValidatingTaint(ctx, node, true); err != nil {
			return err
		}
		return r.finish(ctx, in, v1alpha1.PhaseFailed, v1alpha1.ReasonValidationFailed,
			what+"; this says nothing of the node, so it is not replaced: it stays cordoned and tainted until an operator fixes the configuration")
	}
	if node.Name != in.nr.Spec.NodeName {
		in.node = node
		if err := r.cordon(ctx, in); err != nil {
			return err
		}
		return r.finish(ctx, in, v1alpha1.PhaseFailed, v1alpha1.ReasonValidationFailed,
			"replacement "+what+"; the node stays cordoned and tainted for an operator")
	}
	st.Action = v1alpha1.ActionReplace
	st.Attempts++
	rec := r.audit.record(in, audit.Escalated, string(audit.Escalated), int(st.Attempts))
	rec.Action, rec.Reason, rec.Severity = string(v1alpha1.ActionReplace), v1alpha1.ReasonValidationFailed, audit.SeverityWarning
	r.audit.write(ctx, rec)
	return r.setPhase(ctx, in, v1alpha1.PhaseReplacing, v1alpha1.ReasonValidationFailed, what+"; replacing the node")
}

// setValidatingTaint adds (or removes) TaintValidating on node.
func (r *remediationReconciler) setValidatingTaint(ctx context.Context, node *corev1.Node, on bool) error {
	return patchNodeGuarded(ctx, r.client, r.reader, node, func(n *corev1.Node) bool {
		if !on {
			return removeValidatingTaint(n)
		}
		if hasValidatingTaint(n) {
			return false
		}
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: v1alpha1.TaintValidating, Effect: corev1.TaintEffectNoSchedule})
		return true
	})
}

func hasValidatingTaint(n *corev1.Node) bool { return nodemark.HasValidatingTaint(n) }

// removeValidatingTaint removes the taint and reports whether it was there.
func removeValidatingTaint(n *corev1.Node) bool { return nodemark.RemoveValidatingTaint(n) }

// checkFloor is the floor of c for node: for NCCL and NVBandwidth, the
// first of the policy's floors whose product the node's GPU product label
// contains (case-insensitive; "*" matches any).
func checkFloor(c v1alpha1.ValidationCheck, node *corev1.Node) (floor string, minGBps float64, err error) {
	if c.Kind != v1alpha1.CheckNCCL && c.Kind != v1alpha1.CheckNVBandwidth {
		return "", 0, nil
	}
	product := node.Labels[v1alpha1.LabelNvidiaGPUProduct]
	if f, ok := matchFloor(c.Floors, product); ok {
		return fmt.Sprintf("%d GB/s", f.MinGBps), float64(f.MinGBps), nil
	}
	if product == "" {
		product = "(none: the node has no " + v1alpha1.LabelNvidiaGPUProduct + " label)"
	}
	return "", 0, fmt.Errorf("no floor of check %s matches GPU product %s; add one for it, or \"*\"", c.Name, truncate(product, 63))
}

// matchFloor is the first floor that matches product.
func matchFloor(floors []v1alpha1.BandwidthFloor, product string) (v1alpha1.BandwidthFloor, bool) {
	p := strings.ToLower(product)
	for _, f := range floors {
		if f.Product == "*" || (product != "" && strings.Contains(p, strings.ToLower(f.Product))) {
			return f, true
		}
	}
	return v1alpha1.BandwidthFloor{}, false
}

func checkNames(cs []v1alpha1.ValidationCheck) string {
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.Name
	}
	return "checks " + strings.Join(names, ", ")
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
