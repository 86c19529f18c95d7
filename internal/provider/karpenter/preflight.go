package karpenter

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuheal/gpuheal/internal/provider"
)

// needs is what Replace and Status do in the API server: find the NodeClaim
// (get, list), delete it, and record it on the node first (patch).
var needs = []provider.Access{
	{Verb: "get", Group: provider.KarpenterGroup, Resource: "nodeclaims"},
	{Verb: "list", Group: provider.KarpenterGroup, Resource: "nodeclaims"},
	{Verb: "delete", Group: provider.KarpenterGroup, Resource: "nodeclaims"},
	{Verb: "patch", Resource: "nodes"},
}

// Preflight asks the API server whether the controller may do what a
// replace needs (SelfSubjectAccessReview), then lists one NodeClaim to
// prove that Karpenter v1's NodeClaims exist at all.
func (p *Provider) Preflight(ctx context.Context, _ []*corev1.Node) (string, error) {
	msg, err := provider.CheckAccess(ctx, p.client, "provider karpenter", needs)
	if err != nil {
		return "", err
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(NodeClaimGVK.GroupVersion().WithKind(NodeClaimGVK.Kind + "List"))
	if err := p.client.List(ctx, list, client.Limit(1)); err != nil {
		if meta.IsNoMatchError(err) {
			return "", fmt.Errorf("provider karpenter: the API server serves no %s (is Karpenter v1 installed?): %w", NodeClaimGVK, err)
		}
		return "", fmt.Errorf("provider karpenter: listing NodeClaims: %w", err)
	}
	return msg, nil
}
