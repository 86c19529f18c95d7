package remediation

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/audit"
	"github.com/gpuheal/gpuheal/internal/nodemark"
)

// cordon marks the node unschedulable, adds our NoSchedule taint and names
// the incident responsible. It is idempotent, and the patch carries the
// taints it read, so a concurrent writer makes it retry rather than be
// overwritten.
func (r *remediationReconciler) cordon(ctx context.Context, in *incident) error {
	return r.patchNode(ctx, in, func(n *corev1.Node) bool {
		if n.Annotations[v1alpha1.AnnotationCordonedBy] == in.nr.Name && n.Spec.Unschedulable && hasTaint(n) {
			return false
		}
		if n.Annotations == nil {
			n.Annotations = map[string]string{}
		}
		if n.Spec.Unschedulable && n.Annotations[v1alpha1.AnnotationCordonedBy] == "" {
			n.Annotations[v1alpha1.AnnotationWasUnschedulable] = "true"
		}
		n.Annotations[v1alpha1.AnnotationCordonedBy] = in.nr.Name
		n.Spec.Unschedulable = true
		if !hasTaint(n) {
			n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: v1alpha1.TaintUnhealthy, Effect: corev1.TaintEffectNoSchedule})
		}
		return true
	})
}

// patchNode applies change to the node with a JSON patch that tests the
// fields the change depends on (cordonPatch). When they moved since the
// node was read, it is read again from the API server and the change
// applied again, without a trip through the work queue.
func (r *remediationReconciler) patchNode(ctx context.Context, in *incident, change func(*corev1.Node) bool) error {
	return patchNodeGuarded(ctx, r.client, r.reader, in.node, change)
}

// patchNodeGuarded applies change to n as a guarded JSON patch (cordonPatch),
// reading the node again and retrying when it changed meanwhile.
func patchNodeGuarded(ctx context.Context, c client.Client, reader client.Reader, n *corev1.Node, change func(*corev1.Node) bool) error {
	stale := func(err error) bool { return apierrors.IsInvalid(err) || apierrors.IsConflict(err) }
	return retry.OnError(retry.DefaultRetry, stale, func() error {
		orig := n.DeepCopy()
		if !change(n) {
			return nil
		}
		patch, err := cordonPatch(orig, n)
		if err != nil {
			return err
		}
		err = c.Patch(ctx, n, client.RawPatch(types.JSONPatchType, patch))
		if stale(err) {
			nodePatchConflicts.Inc()
			key := client.ObjectKeyFromObject(n)
			*n = corev1.Node{} // decoding into a used object would merge its maps
			if gerr := reader.Get(ctx, key, n); gerr != nil {
				return gerr
			}
		}
		if err != nil {
			return fmt.Errorf("patching node %s: %w", n.Name, err)
		}
		return nil
	})
}

// uncordon undoes our cordon, and only ours.
func (r *remediationReconciler) uncordon(ctx context.Context, in *incident) error {
	if in.node == nil || in.node.Annotations[v1alpha1.AnnotationCordonedBy] != in.nr.Name {
		return nil
	}
	rec := r.audit.record(in, audit.Uncordoned, string(audit.Uncordoned), 0)
	err := r.patchNode(ctx, in, func(n *corev1.Node) bool {
		if n.Annotations[v1alpha1.AnnotationCordonedBy] != in.nr.Name {
			return false
		}
		undoCordon(n)
		return true
	})
	if err == nil {
		r.audit.write(ctx, rec)
	}
	return err
}

// undoCordon removes our taint and annotations, and our cordon unless
// someone else had cordoned the node before us.
func undoCordon(n *corev1.Node) { nodemark.UndoCordon(n) }

func hasTaint(n *corev1.Node) bool { return nodemark.HasTaint(n) }
