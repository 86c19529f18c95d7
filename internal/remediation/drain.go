package remediation

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/audit"
)

// podNodeField selects a node's pods on the API server, so draining one node
// never needs a cache of every pod in the cluster.
const podNodeField = "spec.nodeName"

// drainPlan sorts a node's pods.
type drainPlan struct {
	evict       []*corev1.Pod // still to evict
	leavingPods []*corev1.Pod // already terminating
	blocked     []string      // pods the policy forbids evicting (emptyDir)
	skipped     int           // DaemonSet and mirror pods, left in place
	self        bool          // gpuheal's own pods are on the node, left in place
	finished    int           // Succeeded or Failed pods, nothing to move
	// finishedPods are the finished pods' namespace/name: a pod the
	// drain waited on that exited.
	finishedPods map[string]bool
	// A partial drain (a GPU reset) evicts only the pods holding the
	// faulty GPUs: others counts the node's other pods, left running;
	// notHere the pods the agent listed that are not on the node.
	others  int
	notHere []string
}

func (p drainPlan) done() bool {
	return len(p.evict) == 0 && len(p.leavingPods) == 0 && len(p.blocked) == 0
}

func (r *remediationReconciler) planDrain(ctx context.Context, in *incident) (drainPlan, error) {
	var pods corev1.PodList
	if err := r.reader.List(ctx, &pods, client.MatchingFields{podNodeField: in.nr.Spec.NodeName}); err != nil {
		return drainPlan{}, fmt.Errorf("listing pods of node %s: %w", in.nr.Spec.NodeName, err)
	}
	plan := drainPlan{finishedPods: map[string]bool{}}
	var only map[string]bool // nil: every pod of the node
	if partialDrain(in) && in.node != nil {
		only = resetPods(in)
	}
	allowEmptyDir := *in.policy.Spec.Drain.DeleteEmptyDirData
	for i := range pods.Items {
		pod := &pods.Items[i]
		key := pod.Namespace + "/" + pod.Name
		if only != nil {
			// The list is the agent's; the pod list is the API server's,
			// by spec.nodeName. Only a pod in both is the GPUs' own.
			if !only[key] || pod.Spec.NodeName != in.nr.Spec.NodeName {
				plan.others++
				continue
			}
			delete(only, key)
		}
		switch {
		case isDaemonSetPod(pod) || pod.Annotations[corev1.MirrorPodAnnotationKey] != "":
			plan.skipped++
		case r.isOwnPod(pod):
			plan.self = true
		case pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed:
			plan.finished++
			plan.finishedPods[key] = true
		case pod.DeletionTimestamp != nil:
			plan.leavingPods = append(plan.leavingPods, pod)
		case !allowEmptyDir && hasEmptyDir(pod):
			plan.blocked = append(plan.blocked, key+" (emptyDir)")
		default:
			plan.evict = append(plan.evict, pod)
		}
	}
	for key := range only {
		plan.notHere = append(plan.notHere, key)
	}
	slices.Sort(plan.notHere)
	return plan, nil
}

// isOwnPod: the controller's own pod, or another pod of gpuheal's in its
// namespace (a standby replica, the uninstall Job that stops the controller).
// Evicting the first stalls the incident; evicting the Job races the
// uninstall it performs.
func (r *remediationReconciler) isOwnPod(p *corev1.Pod) bool {
	if r.self.Name == "" || p.Namespace != r.self.Namespace {
		return false
	}
	return p.Name == r.self.Name || p.Labels[v1alpha1.LabelPartOf] == v1alpha1.LabelPartOfValue
}

func isDaemonSetPod(p *corev1.Pod) bool {
	for _, o := range p.OwnerReferences {
		if o.Kind == "DaemonSet" && o.Controller != nil && *o.Controller {
			return true
		}
	}
	return false
}

func hasEmptyDir(p *corev1.Pod) bool {
	for _, v := range p.Spec.Volumes {
		if v.EmptyDir != nil {
			return true
		}
	}
	return false
}

// cordoned starts the drain.
func (r *remediationReconciler) cordoned(ctx context.Context, in *incident) (ctrl.Result, error) {
	if done, res, err := r.cancelIfMoot(ctx, in); done {
		return res, err
	}
	if err := r.setPhase(ctx, in, v1alpha1.PhaseDraining, v1alpha1.ReasonDraining, "evicting pods through the Eviction API"+drainModesNote(in)); err != nil {
		return ctrl.Result{}, err
	}
	return r.draining(ctx, in)
}

// draining evicts what is left, waits for pods to go, and applies the
// policy's choice once the timeout has passed.
func (r *remediationReconciler) draining(ctx context.Context, in *incident) (ctrl.Result, error) {
	if done, res, err := r.cancelIfMoot(ctx, in); done {
		return res, err
	}
	if _, why := outgrown(in); why != "" {
		return r.escalateReset(ctx, in, why)
	}
	plan, err := r.planDrain(ctx, in)
	if err != nil {
		return ctrl.Result{}, err
	}
	if plan.done() {
		// The last pods waited on exited or went: their waits end with
		// the drain, written by the phase change below.
		r.closeVanishedWaits(ctx, in, &plan, r.clock.Now(), &modePass{})
		msg := fmt.Sprintf("%d pods evicted; %d DaemonSet or mirror pods left in place", len(in.nr.Status.EvictedPods), plan.skipped)
		if plan.self {
			msg += "; gpuheal's own pods left in place"
		}
		if partialDrain(in) {
			msg = fmt.Sprintf("%d pods holding %s evicted; %d other pods left running, the node schedulable",
				len(in.nr.Status.EvictedPods), gpuNames(in.nr.Status.GPUReset.GPUs), plan.others)
		}
		if s := waitsSummary(in.nr.Status.WorkloadWaits); s != "" {
			msg += "; " + s
		}
		if err := r.setPhase(ctx, in, v1alpha1.PhaseDrained, v1alpha1.ReasonDrained, msg); err != nil {
			return ctrl.Result{}, err
		}
		return r.drained(ctx, in)
	}
	pass, err := r.applyDrainModes(ctx, in, &plan)
	if err != nil {
		return ctrl.Result{}, err
	}
	changed := pass.changed
	d := in.policy.Spec.Drain
	// The drain timeout counts from the end of the last workload wait: a
	// checkpoint the policy waits for is not a pod stuck behind a PDB.
	overdue := r.clock.Since(pass.timeoutFrom) > d.Timeout.Duration
	if overdue && d.OnTimeout == v1alpha1.DrainProceed {
		return ctrl.Result{}, r.setPhase(ctx, in, v1alpha1.PhaseDrained, v1alpha1.ReasonDrainTimeout,
			fmt.Sprintf("drain timeout %s passed with %d pods left; proceeding as the policy says", d.Timeout.Duration, len(plan.evict)+len(plan.leavingPods)+len(plan.blocked)))
	}
	force := overdue && d.OnTimeout == v1alpha1.DrainForceDelete
	var refused []string
	for _, pod := range pass.evict {
		key := pod.Namespace + "/" + pod.Name
		err := r.removePod(ctx, pod, d.GracePeriodSeconds, force)
		switch {
		case err == nil:
			in.nr.Status.EvictedPods = append(in.nr.Status.EvictedPods, key)
			changed = true
			rec := r.audit.record(in, audit.Evicted, "evict/"+key, 0)
			rec.Pod = key
			if force {
				rec.Reason, rec.Severity = v1alpha1.ReasonForceDeleted, audit.SeverityWarning
				rec.Message = fmt.Sprintf("deleted without the Eviction API after the drain timeout %s (onTimeout: ForceDelete)", d.Timeout.Duration)
			} else if w := findWait(in.nr, key); w != nil {
				rec.Message = fmt.Sprintf("evicted under drain mode %s (%s)", w.Mode, w.Outcome)
			} else if note := pass.notes[key]; note != "" {
				rec.Message = note
			}
			r.audit.write(ctx, rec)
		case apierrors.IsNotFound(err):
		case apierrors.IsTooManyRequests(err): // a PodDisruptionBudget says not now
			refused = append(refused, key)
			rec := r.audit.record(in, audit.EvictionBlocked, "blocked/"+key, 0)
			rec.Pod, rec.Reason, rec.Message = key, v1alpha1.ReasonEvictionRefused, err.Error()
			r.audit.write(ctx, rec)
		default:
			return ctrl.Result{}, fmt.Errorf("evicting pod %s from node %s: %w", key, in.nr.Spec.NodeName, err)
		}
	}
	for _, pod := range pass.del {
		key := pod.Namespace + "/" + pod.Name
		if err := r.removePod(ctx, pod, nil, true); client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, fmt.Errorf("deleting pod %s from node %s: %w", key, in.nr.Spec.NodeName, err)
		}
		if !slices.Contains(in.nr.Status.EvictedPods, key) {
			in.nr.Status.EvictedPods = append(in.nr.Status.EvictedPods, key)
		}
		changed = true
		rec := r.audit.record(in, audit.Evicted, "delete/"+key, 0)
		rec.Pod, rec.Reason, rec.Severity = key, v1alpha1.ReasonForceDeleted, audit.SeverityWarning
		rec.Message = "deleted without the Eviction API: still on the node after its DeleteAfterTimeout timeout"
		r.audit.write(ctx, rec)
	}
	// Pods with emptyDir data the policy forbids deleting (plan.blocked)
	// are not forced either: deleteEmptyDirData=false keeps that data
	// whatever onTimeout says, and they hold the drain like a PDB.
	held := append(refused, plan.blocked...)
	if len(held) > 0 {
		msg := fmt.Sprintf("%d pods cannot leave yet: %s", len(held), strings.Join(firstN(held, 5), ", "))
		if overdue {
			msg += fmt.Sprintf("; drain timeout %s passed, waiting as the policy says", d.Timeout.Duration)
		}
		changed = r.setCondition(in, v1alpha1.ConditionDrainBlocked, metav1.ConditionTrue, v1alpha1.ReasonEvictionRefused, msg) || changed
	} else if len(pass.waiting) > 0 {
		changed = r.setCondition(in, v1alpha1.ConditionDrainBlocked, metav1.ConditionTrue, v1alpha1.ReasonWorkloadWait, waitSummary(pass.waiting)) || changed
	} else {
		changed = r.setCondition(in, v1alpha1.ConditionDrainBlocked, metav1.ConditionFalse, v1alpha1.ReasonEvicting, "evictions accepted") || changed
	}
	if changed {
		if err := r.client.Status().Update(ctx, in.nr); err != nil {
			return ctrl.Result{}, fmt.Errorf("recording evictions of %s: %w", in.nr.Name, err)
		}
	}
	return ctrl.Result{RequeueAfter: r.poll}, nil
}

// removePod evicts a pod through the Eviction API (PodDisruptionBudgets
// apply), or deletes it outright when forcing.
func (r *remediationReconciler) removePod(ctx context.Context, pod *corev1.Pod, grace *int64, force bool) error {
	if force {
		zero := int64(0)
		return r.client.Delete(ctx, pod, &client.DeleteOptions{GracePeriodSeconds: &zero})
	}
	ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace}}
	if grace != nil {
		ev.DeleteOptions = &metav1.DeleteOptions{GracePeriodSeconds: grace}
	}
	return r.client.SubResource("eviction").Create(ctx, pod, ev)
}

func firstN(s []string, n int) []string {
	if len(s) > n {
		return append(s[:n:n], fmt.Sprintf("and %d more", len(s)-n))
	}
	return s
}
