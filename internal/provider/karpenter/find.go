package karpenter

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
	"github.com/gpuheal/gpuheal/internal/provider"
)

// find returns the name of the NodeClaim that owns node and the object
// itself; the object is nil when the node names a NodeClaim that no longer
// exists (deleted by us or by Karpenter).
//
// Only the NodeClaim's status proves ownership: status.providerID is the
// instance, status.nodeName the node that registered, and both are written
// by Karpenter. The node's own hints (our replace annotation, its owner
// references) can be written by its kubelet or agent, so they only say
// which NodeClaim to look at; one that exists and is not this node's is
// refused with provider.ErrNotOwned. Without any match the error wraps
// provider.ErrNotFound.
func (p *Provider) find(ctx context.Context, node *corev1.Node) (string, *unstructured.Unstructured, error) {
	if name := node.Annotations[v1alpha1.AnnotationReplaceNodeClaim]; name != "" {
		name, claim, err := p.get(ctx, name)
		if err != nil || claim == nil {
			return name, claim, err
		}
		return name, claim, verify(node, claim, "annotation "+v1alpha1.AnnotationReplaceNodeClaim)
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(NodeClaimGVK.GroupVersion().WithKind(NodeClaimGVK.Kind + "List"))
	if err := p.client.List(ctx, list); err != nil {
		if meta.IsNoMatchError(err) {
			return "", nil, fmt.Errorf("listing NodeClaims (is Karpenter v1 installed?): %w", err)
		}
		return "", nil, fmt.Errorf("listing NodeClaims: %w", err)
	}
	for i := range list.Items {
		if owns(node, &list.Items[i]) {
			return list.Items[i].GetName(), &list.Items[i], nil
		}
	}
	for _, ref := range node.OwnerReferences {
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err != nil || gv.Group != NodeClaimGVK.Group || ref.Kind != NodeClaimGVK.Kind {
			continue
		}
		for i := range list.Items {
			if list.Items[i].GetName() == ref.Name {
				// It exists and did not match above: not this node's.
				return ref.Name, &list.Items[i], verify(node, &list.Items[i], "owner reference")
			}
		}
		// The node was Karpenter's; its NodeClaim is already gone.
		return ref.Name, nil, nil
	}
	return "", nil, fmt.Errorf("no NodeClaim has providerID %q or nodeName %q, and the node has no NodeClaim owner: %w",
		node.Spec.ProviderID, node.Name, provider.ErrNotFound)
}

// owns reports whether the NodeClaim's status names node: its providerID
// when both know one (they must agree: a stale claim can carry the name of
// a node that was since reused), else its nodeName.
func owns(node *corev1.Node, claim *unstructured.Unstructured) bool {
	nodeName, _, _ := unstructured.NestedString(claim.Object, "status", "nodeName")
	providerID, _, _ := unstructured.NestedString(claim.Object, "status", "providerID")
	if node.Spec.ProviderID != "" && providerID != "" {
		return providerID == node.Spec.ProviderID
	}
	return nodeName == node.Name
}

// verify refuses a NodeClaim that the node's hint (named by via) points at
// but whose status does not name the node.
func verify(node *corev1.Node, claim *unstructured.Unstructured, via string) error {
	if owns(node, claim) {
		return nil
	}
	nodeName, _, _ := unstructured.NestedString(claim.Object, "status", "nodeName")
	providerID, _, _ := unstructured.NestedString(claim.Object, "status", "providerID")
	return fmt.Errorf("node %s (providerID %q) points at NodeClaim %s by its %s, but that NodeClaim's status has nodeName %q and providerID %q; refusing to delete it: %w",
		node.Name, node.Spec.ProviderID, claim.GetName(), via, nodeName, providerID, provider.ErrNotOwned)
}

// get reads one NodeClaim; absent is a nil object, not an error.
func (p *Provider) get(ctx context.Context, name string) (string, *unstructured.Unstructured, error) {
	claim := newNodeClaim()
	if err := p.client.Get(ctx, client.ObjectKey{Name: name}, claim); err != nil {
		if apierrors.IsNotFound(err) {
			return name, nil, nil
		}
		return "", nil, fmt.Errorf("reading NodeClaim %s: %w", name, err)
	}
	return name, claim, nil
}
