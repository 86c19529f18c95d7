package provider

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
)

// The Karpenter v1 NodeClaim: its group and kind identify a node's owner
// reference; the karpenter provider builds its GroupVersionKind from them.
const (
	KarpenterGroup   = "karpenter.sh"
	NodeClaimKind    = "NodeClaim"
	KarpenterVersion = "v1"
)

// Guess names the provider of a node whose policy names none: karpenter for
// a node Karpenter launched (on EC2 too: such a node is in no Auto Scaling
// group, see Set.Resolve), else from its providerID scheme (aws:///… →
// aws, kwok:// → kwok), else none.
func Guess(node *corev1.Node) string {
	if node == nil {
		return None
	}
	if KarpenterLaunched(node) {
		if FromProviderID(node.Spec.ProviderID) == AWS {
			return AWS
		}
		return Karpenter
	}
	return FromProviderID(node.Spec.ProviderID)
}

// KarpenterLaunched reports whether Karpenter launched the node: it carries
// Karpenter's node pool label or a NodeClaim owner reference. Either can be
// written by the node itself, which is why this only chooses the provider:
// the karpenter provider deletes a NodeClaim only when the NodeClaim's own
// status names the node.
func KarpenterLaunched(node *corev1.Node) bool {
	if _, ok := node.Labels[v1alpha1.LabelKarpenterNodePool]; ok {
		return true
	}
	for _, ref := range node.OwnerReferences {
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err == nil && gv.Group == KarpenterGroup && ref.Kind == NodeClaimKind {
			return true
		}
	}
	return false
}
