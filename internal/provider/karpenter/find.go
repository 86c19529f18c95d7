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
// exists (deleted by us or by Karpenter). Matching follows what Karpenter
// writes: status.providerID is the instance, status.nodeName the node that
// registered, and the node's owner reference the NodeClaim. Without any of
// these the error wraps provider.ErrNotFound.
func (p *Provider) find(ctx context.Context, node *corev1.Node) (string, *unstructured.Unstructured, error) {
	if name := node.Annotations[v1alpha1.AnnotationReplaceNodeClaim]; name != "" {
		return p.get(ctx, name)
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(NodeClaimGVK.GroupVersion().WithKind(NodeClaimGVK.Kind + "List"))
	if err := p.client.List(ctx, list); err != nil {
		if meta.IsNoMatchError(err) {
			return "", nil, fmt.Errorf("listing NodeClaims (is Karpenter v1 installed?): %w", err)
		}
		return "", nil, fmt.Errorf("listing NodeClaims: %w", err)
	}
	if id := node.Spec.ProviderID; id != "" {
		if c := match(list.Items, "providerID", id); c != nil {
			return c.GetName(), c, nil
		}
	}
	if c := match(list.Items, "nodeName", node.Name); c != nil {
		return c.GetName(), c, nil
	}
	for _, ref := range node.OwnerReferences {
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err != nil || gv.Group != NodeClaimGVK.Group || ref.Kind != NodeClaimGVK.Kind {
			continue
		}
		for i := range list.Items {
			if list.Items[i].GetName() == ref.Name {
				return ref.Name, &list.Items[i], nil
			}
		}
		// The node was Karpenter's; its NodeClaim is already gone.
		return ref.Name, nil, nil
	}
	return "", nil, fmt.Errorf("no NodeClaim has providerID %q or nodeName %q, and the node has no NodeClaim owner: %w",
		node.Spec.ProviderID, node.Name, provider.ErrNotFound)
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

func match(items []unstructured.Unstructured, field, want string) *unstructured.Unstructured {
	for i := range items {
		if v, _, _ := unstructured.NestedString(items[i].Object, "status", field); v == want {
			return &items[i]
		}
	}
	return nil
}
