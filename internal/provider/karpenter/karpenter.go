// Package karpenter replaces nodes that Karpenter launched by deleting the
// NodeClaim that owns them: Karpenter then drains and terminates the
// instance and, if pods need the capacity, launches a new one. Karpenter
// has no reboot verb, so Reboot is unsupported; a policy for Karpenter nodes
// goes straight to replace.
//
// NodeClaims are read as unstructured objects so that gpuheal does not pin
// Karpenter's Go module (and its cloud SDKs) for three fields.
package karpenter

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/provider"
)

// NodeClaimGVK is the Karpenter v1 NodeClaim (cluster-scoped).
var NodeClaimGVK = schema.GroupVersionKind{Group: provider.KarpenterGroup, Version: provider.KarpenterVersion, Kind: provider.NodeClaimKind}

// Provider deletes NodeClaims.
type Provider struct {
	client client.Client
}

var _ provider.Provider = (*Provider)(nil)

// New returns a provider that reads and deletes NodeClaims through c. c
// needs get/list/delete on nodeclaims.karpenter.sh and get/patch on nodes.
func New(c client.Client) *Provider { return &Provider{client: c} }

// Name is provider.Karpenter.
func (p *Provider) Name() string { return provider.Karpenter }

// Reboot is unsupported: Karpenter can only replace.
func (p *Provider) Reboot(_ context.Context, node *corev1.Node, _ string) (string, error) {
	return "", fmt.Errorf("rebooting node %s: Karpenter has no reboot, use replace: %w", node.Name, provider.ErrUnsupported)
}

// Replace deletes the NodeClaim that owns node. It returns the NodeClaim's
// name as the request id; a NodeClaim already deleting or gone counts as
// done, so a repeat is a no-op.
func (p *Provider) Replace(ctx context.Context, node *corev1.Node, token string) (string, error) {
	node = provider.LatestNode(ctx, p.client, node)
	name, claim, err := p.find(ctx, node)
	if err != nil {
		return "", fmt.Errorf("replacing node %s: %w", node.Name, err)
	}
	if claim == nil || claim.GetDeletionTimestamp() != nil {
		return name, nil
	}
	if err := p.record(ctx, node, name, token); err != nil {
		return "", err
	}
	// The UID precondition keeps a stale lookup from deleting a newer
	// NodeClaim that happens to reuse the name.
	uid := claim.GetUID()
	if err := p.client.Delete(ctx, claim, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil {
		return "", fmt.Errorf("deleting NodeClaim %s of node %s: %w", name, node.Name, err)
	}
	return name, nil
}

// Status reports the NodeClaim's lifecycle: absent is Gone, deleting is
// Terminating, anything else Running.
func (p *Provider) Status(ctx context.Context, node *corev1.Node) (provider.InstanceStatus, error) {
	name, claim, err := p.find(ctx, provider.LatestNode(ctx, p.client, node))
	switch {
	case errors.Is(err, provider.ErrNotFound):
		return provider.InstanceStatus{State: provider.StateGone, Detail: fmt.Sprintf("no NodeClaim owns node %s", node.Name)}, nil
	case err != nil:
		return provider.InstanceStatus{}, fmt.Errorf("status of node %s: %w", node.Name, err)
	case claim == nil:
		return provider.InstanceStatus{State: provider.StateGone, ID: name, Detail: "NodeClaim " + name + " is gone"}, nil
	case claim.GetDeletionTimestamp() != nil:
		return provider.InstanceStatus{State: provider.StateTerminating, ID: name, Detail: "NodeClaim " + name + " is being deleted"}, nil
	}
	return provider.InstanceStatus{State: provider.StateRunning, ID: name}, nil
}

// record notes on the node which NodeClaim this incident deletes.
func (p *Provider) record(ctx context.Context, node *corev1.Node, name, token string) error {
	err := provider.AnnotateNode(ctx, p.client, node, map[string]string{v1alpha1.AnnotationReplaceNodeClaim: name, v1alpha1.AnnotationReplaceToken: token})
	if err != nil {
		return fmt.Errorf("recording NodeClaim %s on node %s: %w", name, node.Name, err)
	}
	return nil
}

func newNodeClaim() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(NodeClaimGVK)
	return u
}
