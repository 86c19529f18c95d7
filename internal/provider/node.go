package provider

import (
	"context"
	"maps"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// LatestNode re-reads node so that annotations written by an earlier call
// are seen even when the caller holds an older copy; a node that cannot be
// read (already deleted) leaves the caller's copy as the best we know.
func LatestNode(ctx context.Context, c client.Reader, node *corev1.Node) *corev1.Node {
	var fresh corev1.Node
	if err := c.Get(ctx, client.ObjectKeyFromObject(node), &fresh); err != nil {
		return node
	}
	return &fresh
}

// AnnotateNode merges annotations into the node, doing nothing when it has
// them already; a node that is gone is not an error. Providers record on the
// node what a replace is about to delete, so a repeat after a crash finds it.
func AnnotateNode(ctx context.Context, c client.Client, node *corev1.Node, ann map[string]string) error {
	missing := false
	for k, v := range ann {
		if node.Annotations[k] != v {
			missing = true
		}
	}
	if !missing {
		return nil
	}
	base := node.DeepCopy()
	patched := node.DeepCopy()
	if patched.Annotations == nil {
		patched.Annotations = map[string]string{}
	}
	maps.Copy(patched.Annotations, ann)
	return client.IgnoreNotFound(c.Patch(ctx, patched, client.MergeFrom(base)))
}
