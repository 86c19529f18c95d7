package karpenter

import (
	"context"

	corev1 "k8s.io/api/core/v1"

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
	return provider.CheckAccessAndList(ctx, p.client, "provider karpenter", needs, NodeClaimGVK, "Karpenter v1")
}
