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
		return ctrl.Result{}, r.finish(ctx, in, v1alpha1.PhaseCancelled, v1alpha1.ReasonNodeDeleted, "node "+name+" was deleted while its checks ran")
	}
	var checks []v1alpha1.ValidationCheck
	if in.policy.Spec.Validation != nil {
		checks = in.policy.Spec.Validation.Checks
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
	return ctrl.Result{}, r.validationPassed(ctx, in, node, passed)
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
// (written to the status).
func (r *remediationReconciler) runCheck(ctx context.Context, in *incident, node *corev1.Node, c v1alpha1.ValidationCheck, res *v1alpha1.CheckResult) (time.Duration, error) {
	wait, err := r.stepCheck(ctx, node, c, res, checkJobOwner{purpose: v1alpha1.CheckPurposeRepair, incident: in.nr.Name})
	if err != nil || wait > 0 {
		return wait, err
	}
	if err := r.client.Status().Update(ctx, in.nr); err != nil {
		return 0, err
	}
	r.checkFinished(ctx, in, node, *res)
	return 0, nil
}

// stepCheck advances check c on node for whoever runs it (an incident's
// gate, a join or an idle check): it returns how soon to look again while
// the check runs, or 0 once it has filled res's outcome, which the caller
// saves.
func (r *remediationReconciler) stepCheck(ctx context.Context, node *corev1.Node, c v1alpha1.ValidationCheck, res *v1alpha1.CheckResult, owner checkJobOwner) (time.Duration, error) {
	var got jobCheck
	if c.Kind == v1alpha1.CheckAgent {
		raw, ok := node.Annotations[v1alpha1.AnnotationAgentChecks]
		v := judgeAgentReport(raw, ok, res.Started.Time, node.Status.NodeInfo.BootID, c.AgentChecks)
		got = jobCheck{outcome: v.outcome, value: v.value, floor: v.floor, message: v.message, excerpt: v.excerpt, wait: v.pending}
	} else {
		var err error
		if got, err = r.runJobCheck(ctx, node, c, res, owner); err != nil {
			return 0, err
		}
	}
	if got.outcome == "" {
		left := checkTimeout(c) - r.clock.Since(res.Started.Time)
		if left > 0 {
			return min(left, r.poll), nil
		}
		got.outcome = v1alpha1.CheckError
		got.message = fmt.Sprintf("no result within the check's timeout of %s: %s", checkTimeout(c), got.wait)
		if c.Kind != v1alpha1.CheckAgent {
			if !r.checkScheduled(ctx, res.Job) {
				got.message = fmt.Sprintf("%s on %s within the check's timeout of %s", notScheduledPrefix, node.Name, checkTimeout(c))
			}
			if err := r.deleteCheckJobRef(ctx, res.Job); err != nil {
				return 0, err
			}
		}
	}
	now := metav1.NewTime(r.clock.Now())
	res.Outcome, res.Value, res.Floor, res.Finished = got.outcome, truncate(got.value, 256), truncate(got.floor, 256), &now
	res.Message, res.Excerpt = truncate(got.message, 1024), truncate(got.excerpt, 2048)
	if got.disrupted {
		res.Message = truncate(disruptedPrefix+res.Message, 1024)
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
