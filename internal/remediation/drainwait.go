package remediation

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/audit"
)

// maxWorkloadWaits bounds status.workloadWaits (the CRD's MaxItems): past
// it a wait is still honoured, from the pod's annotations and the drain's
// start, only not listed.
const maxWorkloadWaits = 256

// modePass is what the drain modes decide for one pass of the drain.
type modePass struct {
	evict   []*corev1.Pod // through the Eviction API now
	del     []*corev1.Pod // deleted now: DeleteAfterTimeout past its timeout
	waiting []string      // "ns/name (mode until T)"
	changed bool          // the incident's status changed
	// timeoutFrom is when the drain timeout starts counting: the drain's
	// start, or the end of its last wait.
	timeoutFrom time.Time
	// notes say, per pod, why its mode was not honoured (audit).
	notes map[string]string
}

// applyDrainModes sorts the plan's pods by the policy's drain modes. Its
// state lives in the incident's status (the waits, their deadlines) and
// in the pods' annotations (the checkpoint request and answer), never in
// memory, so a new controller carries on any wait where the last stopped.
func (r *remediationReconciler) applyDrainModes(ctx context.Context, in *incident, plan *drainPlan) (modePass, error) {
	start := enteredAt(in.nr, v1alpha1.PhaseDraining)
	now := r.clock.Now()
	pass := modePass{timeoutFrom: start, notes: map[string]string{}}
	sev := incidentSeverity(in.nr.Spec.Trigger)
	r.closeVanishedWaits(ctx, in, plan, now, &pass)
	for _, pod := range plan.evict {
		rule := in.policy.workloadFor(pod)
		if rule == nil || rule.Mode == v1alpha1.DrainImmediate || rule.Mode == "" {
			pass.evict = append(pass.evict, pod)
			continue
		}
		key := pod.Namespace + "/" + pod.Name
		if sev == severityGone {
			pass.notes[key] = fmt.Sprintf("drain mode %s not honoured: the GPU is gone (%s), evicted at once", rule.Mode, in.nr.Spec.Trigger.Reason)
			pass.evict = append(pass.evict, pod)
			continue
		}
		wait := sev.bound(rule.configuredWait())
		switch rule.Mode {
		case v1alpha1.DrainAllowCompletion:
			w := r.ensureWait(in, key, rule.Mode, start, start.Add(wait), &pass)
			if now.After(w.Deadline.Time) {
				r.endWait(ctx, in, w, v1alpha1.WaitTimedOut, now, &pass)
				pass.evict = append(pass.evict, pod)
				continue
			}
			pass.waiting = append(pass.waiting, fmt.Sprintf("%s (%s until %s)", key, rule.Mode, w.Deadline.UTC().Format(time.RFC3339)))
		case v1alpha1.DrainCheckpointThenEvict:
			evict, err := r.checkpointStep(ctx, in, pod, wait, start, now, &pass)
			if err != nil {
				return pass, err
			}
			if evict {
				pass.evict = append(pass.evict, pod)
			}
		case v1alpha1.DrainDeleteAfterTimeout:
			w := r.ensureWait(in, key, rule.Mode, start, start.Add(wait), &pass)
			if now.After(w.Deadline.Time) {
				r.endWait(ctx, in, w, v1alpha1.WaitDeleted, now, &pass)
				pass.del = append(pass.del, pod)
				continue
			}
			pass.evict = append(pass.evict, pod) // a PDB may refuse; deleted once the timeout passes
		}
	}
	// An evicted DeleteAfterTimeout pod that is slow to go (a long grace
	// period, a stuck finalizer-free shutdown) is deleted at its timeout.
	for _, pod := range plan.leavingPods {
		key := pod.Namespace + "/" + pod.Name
		if w := findWait(in.nr, key); w != nil && w.Mode == v1alpha1.DrainDeleteAfterTimeout && w.Outcome == "" && now.After(w.Deadline.Time) {
			r.endWait(ctx, in, w, v1alpha1.WaitDeleted, now, &pass)
			pass.del = append(pass.del, pod)
		}
	}
	for i := range in.nr.Status.WorkloadWaits {
		w := &in.nr.Status.WorkloadWaits[i]
		if w.Mode == v1alpha1.DrainDeleteAfterTimeout {
			continue // evicted at once: the drain timeout runs beside it
		}
		end := w.Deadline.Time
		if w.EndedAt != nil && w.EndedAt.Before(&w.Deadline) {
			end = w.EndedAt.Time
		}
		if end.After(pass.timeoutFrom) {
			pass.timeoutFrom = end
		}
	}
	return pass, nil
}

// checkpointStep asks the pod to checkpoint, or reads its answer; true:
// evict it now.
func (r *remediationReconciler) checkpointStep(ctx context.Context, in *incident, pod *corev1.Pod, wait time.Duration, start, now time.Time, pass *modePass) (bool, error) {
	key := pod.Namespace + "/" + pod.Name
	requested, ok := checkpointRequestedAt(pod, start, now)
	w := findWait(in.nr, key)
	if !ok && (w == nil || w.Outcome != "") {
		if w != nil {
			return true, nil // asked, answered and evicted once: evict again
		}
		at := now.Truncate(time.Second)
		deadline := at.Add(wait)
		if err := r.requestCheckpoint(ctx, in, pod, at, deadline); err != nil {
			return false, err
		}
		r.ensureWait(in, key, v1alpha1.DrainCheckpointThenEvict, at, deadline, pass)
		pass.waiting = append(pass.waiting, fmt.Sprintf("%s (checkpoint until %s)", key, deadline.UTC().Format(time.RFC3339)))
		return false, nil
	}
	if !ok {
		requested = w.Since.Time // the pod lost its annotation: the incident's record holds
	}
	// The deadline is the incident's, never the pod's annotation: a pod's
	// owner can edit that and must not hold a node hostage by doing so.
	w = r.ensureWait(in, key, v1alpha1.DrainCheckpointThenEvict, requested, requested.Add(wait), pass)
	if w.Outcome != "" {
		return true, nil
	}
	if checkpointDone(pod, requested) {
		r.endWait(ctx, in, w, v1alpha1.WaitCheckpointDone, now, pass)
		return true, nil
	}
	if now.After(w.Deadline.Time) {
		r.endWait(ctx, in, w, v1alpha1.WaitTimedOut, now, pass)
		return true, nil
	}
	pass.waiting = append(pass.waiting, fmt.Sprintf("%s (checkpoint until %s)", key, w.Deadline.UTC().Format(time.RFC3339)))
	return false, nil
}

// requestCheckpoint writes the request on the pod, then tells it by an
// Event and, where it asks for one, an HTTP POST (in the background).
func (r *remediationReconciler) requestCheckpoint(ctx context.Context, in *incident, pod *corev1.Pod, at, deadline time.Time) error {
	key := pod.Namespace + "/" + pod.Name
	reason := fmt.Sprintf("gpuheal incident %s: node %s, %s=%s %s", in.nr.Name, in.nr.Spec.NodeName,
		in.nr.Spec.Trigger.Type, in.nr.Spec.Trigger.Status, in.nr.Spec.Trigger.Reason)
	req := CheckpointRequest{Pod: key, RequestedAt: at.UTC().Format(time.RFC3339),
		Deadline: deadline.UTC().Format(time.RFC3339), Reason: reason}
	orig := pod.DeepCopy()
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[v1alpha1.AnnotationCheckpointRequestedAt] = req.RequestedAt
	pod.Annotations[v1alpha1.AnnotationCheckpointDeadline] = req.Deadline
	pod.Annotations[v1alpha1.AnnotationCheckpointReason] = req.Reason
	if err := r.client.Patch(ctx, pod, client.MergeFrom(orig)); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("asking pod %s to checkpoint: %w", key, err)
	}
	note := fmt.Sprintf("checkpoint requested by %s; evicted at %s at the latest, or once %s is set or the pod exits",
		in.nr.Name, req.Deadline, v1alpha1.AnnotationCheckpointDone)
	r.recorder.Eventf(pod, in.nr, corev1.EventTypeNormal, v1alpha1.EventReasonCheckpointRequested, "Checkpoint", "%s", note)
	rec := r.audit.record(in, audit.CheckpointRequested, "checkpoint/"+key, 0)
	rec.Pod, rec.Reason, rec.Message = key, v1alpha1.EventReasonCheckpointRequested, note
	if u, why := checkpointURL(pod); u != nil {
		r.checkpoints.Post(ctx, u, req)
		rec.Message += "; POSTed to " + u.Redacted()
	} else if why != "" {
		log.FromContext(ctx).Info("checkpoint URL refused", "pod", key, "why", why)
		rec.Message += "; checkpoint URL refused: " + why
		r.recorder.Eventf(pod, in.nr, corev1.EventTypeWarning, v1alpha1.EventReasonCheckpointRequested, "Checkpoint",
			"annotation %s not used: %s", v1alpha1.AnnotationCheckpointURL, why)
	}
	r.audit.write(ctx, rec)
	return nil
}

// checkpointRequestedAt is the pod's request of this drain: one from
// before the drain started belongs to an earlier incident, one from the
// future was not written by us.
func checkpointRequestedAt(pod *corev1.Pod, start, now time.Time) (time.Time, bool) {
	t, err := time.Parse(time.RFC3339, pod.Annotations[v1alpha1.AnnotationCheckpointRequestedAt])
	if err != nil || t.Before(start.Truncate(time.Second)) || t.After(now) {
		return time.Time{}, false
	}
	return t, true
}

// checkpointDone: the workload's answer is set and not older than the
// request.
func checkpointDone(pod *corev1.Pod, requested time.Time) bool {
	t, err := time.Parse(time.RFC3339, pod.Annotations[v1alpha1.AnnotationCheckpointDone])
	return err == nil && !t.Before(requested.Truncate(time.Second))
}

// ensureWait returns the pod's wait, recording it first if new.
func (r *remediationReconciler) ensureWait(in *incident, key string, mode v1alpha1.DrainMode, since, deadline time.Time, pass *modePass) *v1alpha1.WorkloadWait {
	if w := findWait(in.nr, key); w != nil {
		return w
	}
	w := v1alpha1.WorkloadWait{Pod: key, Mode: mode, Since: metav1.NewTime(since), Deadline: metav1.NewTime(deadline)}
	if len(in.nr.Status.WorkloadWaits) >= maxWorkloadWaits {
		return &w // honoured, not listed
	}
	in.nr.Status.WorkloadWaits = append(in.nr.Status.WorkloadWaits, w)
	pass.changed = true
	return &in.nr.Status.WorkloadWaits[len(in.nr.Status.WorkloadWaits)-1]
}

func findWait(nr *v1alpha1.NodeRemediation, key string) *v1alpha1.WorkloadWait {
	for i := range nr.Status.WorkloadWaits {
		if nr.Status.WorkloadWaits[i].Pod == key {
			return &nr.Status.WorkloadWaits[i]
		}
	}
	return nil
}

// endWait records a wait's outcome in the status and the audit log.
func (r *remediationReconciler) endWait(ctx context.Context, in *incident, w *v1alpha1.WorkloadWait, outcome string, now time.Time, pass *modePass) {
	if w.Outcome != "" {
		return
	}
	t := metav1.NewTime(now)
	w.Outcome, w.EndedAt = outcome, &t
	pass.changed = true
	rec := r.audit.record(in, audit.WorkloadWaited, "waited/"+w.Pod, 0)
	rec.Pod, rec.Reason, rec.Duration = w.Pod, outcome, now.Sub(w.Since.Time)
	rec.Message = fmt.Sprintf("%s: %s after %s (deadline %s)", w.Mode, outcome, now.Sub(w.Since.Time).Round(time.Second), w.Deadline.UTC().Format(time.RFC3339))
	if outcome == v1alpha1.WaitTimedOut || outcome == v1alpha1.WaitDeleted {
		rec.Severity = audit.SeverityWarning
	}
	r.audit.write(ctx, rec)
}

// closeVanishedWaits ends the waits whose pods exited or went.
func (r *remediationReconciler) closeVanishedWaits(ctx context.Context, in *incident, plan *drainPlan, now time.Time, pass *modePass) {
	present := map[string]bool{}
	for _, p := range plan.evict {
		present[p.Namespace+"/"+p.Name] = true
	}
	for _, p := range plan.leavingPods {
		present[p.Namespace+"/"+p.Name] = true
	}
	for i := range in.nr.Status.WorkloadWaits {
		w := &in.nr.Status.WorkloadWaits[i]
		switch {
		case w.Outcome != "" || present[w.Pod]:
		case plan.finishedPods[w.Pod]:
			r.endWait(ctx, in, w, v1alpha1.WaitExited, now, pass)
		default:
			r.endWait(ctx, in, w, v1alpha1.WaitGone, now, pass)
		}
	}
}

// waitSummary is the incident's message while the drain waits on pods.
func waitSummary(waiting []string) string {
	return fmt.Sprintf("waiting on %d pods under their drain modes: %s", len(waiting), strings.Join(firstN(waiting, 5), ", "))
}

// drainModesNote is what the Draining phase's message says of the drain
// modes, when the policy has any: how the fault's severity bounds them.
func drainModesNote(in *incident) string {
	if len(in.policy.workloads) == 0 {
		return ""
	}
	t := in.nr.Spec.Trigger
	switch incidentSeverity(t) {
	case severityGone:
		return fmt.Sprintf("; the GPU is gone (%s): drain modes are not honoured, every pod is evicted at once", t.Reason)
	case severityFatal:
		return fmt.Sprintf("; fatal fault (%s): drain modes wait at most %s", t.Reason, FatalWaitBound)
	default:
		return fmt.Sprintf("; warning-level fault (%s): drain modes wait their full time", t.Reason)
	}
}

// waitsSummary is how the drain's waits ended, for the Drained message:
// "waited on 2 pods under their drain modes (CheckpointDone 1, Exited 1)".
func waitsSummary(ws []v1alpha1.WorkloadWait) string {
	if len(ws) == 0 {
		return ""
	}
	counts := map[string]int{}
	var order []string
	for _, w := range ws {
		o := w.Outcome
		if o == "" {
			o = "waiting"
		}
		if counts[o] == 0 {
			order = append(order, o)
		}
		counts[o]++
	}
	parts := make([]string, 0, len(order))
	for _, o := range order {
		parts = append(parts, fmt.Sprintf("%s %d", o, counts[o]))
	}
	return fmt.Sprintf("waited on %d pods under their drain modes (%s)", len(ws), strings.Join(parts, ", "))
}
