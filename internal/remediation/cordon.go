package remediation

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// wasUnschedulableAnnotation remembers that someone else had cordoned the
// node before us, so finishing our incident does not undo their cordon.
const wasUnschedulableAnnotation = "gpuheal.io/was-unschedulable"

// cordon marks the node unschedulable, adds our NoSchedule taint and names
// the incident responsible. It is idempotent, and the patch carries the
// node's resourceVersion so a concurrent writer makes it retry rather than
// be overwritten.
func (r *remediationReconciler) cordon(ctx context.Context, in *incident) error {
	n := in.node
	if n.Annotations[CordonedByAnnotation] == in.nr.Name && n.Spec.Unschedulable && hasTaint(n) {
		return nil
	}
	orig := n.DeepCopy()
	if n.Annotations == nil {
		n.Annotations = map[string]string{}
	}
	if n.Spec.Unschedulable && n.Annotations[CordonedByAnnotation] == "" {
		n.Annotations[wasUnschedulableAnnotation] = "true"
	}
	n.Annotations[CordonedByAnnotation] = in.nr.Name
	n.Spec.Unschedulable = true
	if !hasTaint(n) {
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: UnhealthyTaint, Effect: corev1.TaintEffectNoSchedule})
	}
	if err := r.client.Patch(ctx, n, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("cordoning node %s: %w", n.Name, err)
	}
	return nil
}

// uncordon undoes our cordon, and only ours.
func (r *remediationReconciler) uncordon(ctx context.Context, in *incident) error {
	n := in.node
	if n == nil || n.Annotations[CordonedByAnnotation] != in.nr.Name {
		return nil
	}
	orig := n.DeepCopy()
	if n.Annotations[wasUnschedulableAnnotation] != "true" {
		n.Spec.Unschedulable = false
	}
	delete(n.Annotations, CordonedByAnnotation)
	delete(n.Annotations, wasUnschedulableAnnotation)
	n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == UnhealthyTaint })
	if err := r.client.Patch(ctx, n, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("uncordoning node %s: %w", n.Name, err)
	}
	return nil
}

func hasTaint(n *corev1.Node) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == UnhealthyTaint })
}
