package remediation

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/provider/karpenter"
)

// otherRemediator says which other system is already repairing or
// removing the node, and by what mark; "" when none is. gpuheal stands
// down on such a node rather than drain or replace it a second time.
//
// The marks:
//   - Karpenter taints a node it disrupts (consolidation, drift, expiry,
//     its node repair, and EKS Auto Mode's repair, which is Karpenter's)
//     karpenter.sh/disrupted:NoSchedule, karpenter.sh/disruption before
//     v1, and deletes its NodeClaim (kubernetes-sigs/karpenter,
//     pkg/controllers/disruption and node/termination).
//   - EKS node auto repair of a managed node group documents no mark of
//     its own (docs.aws.amazon.com/eks/latest/userguide/node-repair.html
//     lists the conditions it acts on and the actions); it cordons and
//     drains the node before it reboots or replaces the instance, so it
//     shows as a cordon gpuheal did not set, as a person's cordon does.
//   - A node being deleted is someone else's to finish.
//
// Every mark is on the Node (or its NodeClaim), written by other systems;
// a node that could forge one only makes gpuheal leave it alone.
func (r *remediationReconciler) otherRemediator(ctx context.Context, n *corev1.Node) (string, error) {
	if n.DeletionTimestamp != nil {
		return "the node is being deleted", nil
	}
	for _, t := range n.Spec.Taints {
		if t.Key == v1alpha1.TaintKarpenterDisrupted || t.Key == v1alpha1.TaintKarpenterDisruption {
			return "Karpenter is disrupting the node (taint " + t.Key + ")", nil
		}
	}
	if n.Spec.Unschedulable && n.Annotations[v1alpha1.AnnotationCordonedBy] == "" {
		return "someone else cordoned the node (spec.unschedulable without " + v1alpha1.AnnotationCordonedBy +
			"): EKS node auto repair, a drain or a person", nil
	}
	claim, err := r.deletingNodeClaim(ctx, n)
	if err != nil || claim == "" {
		return "", err
	}
	return "Karpenter is deleting the node's NodeClaim " + claim, nil
}

// deletingNodeClaim returns the name of the node's NodeClaim (its owner
// reference) when that NodeClaim is being deleted by someone other than
// this node's incident. Without Karpenter's CRD, or without the RBAC to
// read NodeClaims (a policy that does not use the karpenter provider),
// there is none to see: Karpenter's disruption taint still shows.
func (r *remediationReconciler) deletingNodeClaim(ctx context.Context, n *corev1.Node) (string, error) {
	for _, ref := range n.OwnerReferences {
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err != nil || gv.Group != karpenter.NodeClaimGVK.Group || ref.Kind != karpenter.NodeClaimGVK.Kind {
			continue
		}
		if ref.Name == n.Annotations[v1alpha1.AnnotationReplaceNodeClaim] {
			return "", nil // our own replacement deleted it
		}
		claim := &unstructured.Unstructured{}
		claim.SetGroupVersionKind(karpenter.NodeClaimGVK)
		switch err := r.reader.Get(ctx, client.ObjectKey{Name: ref.Name}, claim); {
		case apierrors.IsNotFound(err), apierrors.IsForbidden(err), meta.IsNoMatchError(err):
			return "", nil
		case err != nil:
			return "", fmt.Errorf("reading NodeClaim %s of node %s: %w", ref.Name, n.Name, err)
		}
		if claim.GetDeletionTimestamp() != nil {
			return ref.Name, nil
		}
	}
	return "", nil
}
