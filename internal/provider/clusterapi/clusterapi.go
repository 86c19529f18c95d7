// Package clusterapi replaces nodes that Cluster API manages by deleting
// their Machine: the MachineSet (or control plane) that owns the Machine
// creates a new one, as Cluster API's own MachineHealthCheck remediation
// does. Cluster API has no reboot verb, so Reboot is unsupported; a policy
// for these nodes lists replace as the first step of its ladder.
//
// Machines are read as unstructured objects so that gpuheal does not pin
// Cluster API's Go module.
package clusterapi

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/provider"
)

// MachineGVK is the Cluster API v1beta1 Machine (namespaced).
var MachineGVK = schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta1", Kind: "Machine"}

// Annotations Cluster API writes on the nodes it manages.
const (
	MachineAnnotation          = "cluster.x-k8s.io/machine"
	ClusterNamespaceAnnotation = "cluster.x-k8s.io/cluster-namespace"
)

// Provider deletes Machines.
type Provider struct {
	client client.Client
}

var _ provider.Provider = (*Provider)(nil)

// New returns a provider that reads and deletes Machines through c. c needs
// get/list/delete on machines.cluster.x-k8s.io and get/patch on nodes.
func New(c client.Client) *Provider { return &Provider{client: c} }

// Name is provider.ClusterAPI.
func (p *Provider) Name() string { return provider.ClusterAPI }

// Reboot is unsupported: Cluster API can only replace a Machine.
func (p *Provider) Reboot(_ context.Context, node *corev1.Node, _ string) (string, error) {
	return "", fmt.Errorf("rebooting node %s: Cluster API has no reboot, use replace: %w", node.Name, provider.ErrUnsupported)
}

// Replace deletes the Machine that owns node and returns "namespace/name"
// as the request id. A Machine already deleting or gone counts as done.
// A Machine without a controlling owner is left alone: nothing would
// create its successor, so deleting it would only shrink the cluster.
func (p *Provider) Replace(ctx context.Context, node *corev1.Node, token string) (string, error) {
	node = provider.LatestNode(ctx, p.client, node)
	key, m, err := p.find(ctx, node)
	if err != nil {
		return "", fmt.Errorf("replacing node %s: %w", node.Name, err)
	}
	id := key.String()
	if m == nil || m.GetDeletionTimestamp() != nil {
		return id, nil
	}
	if metav1.GetControllerOf(m) == nil {
		return "", fmt.Errorf("replacing node %s: Machine %s has no controller (MachineSet or control plane) to create a replacement: %w",
			node.Name, id, provider.ErrUnsupported)
	}
	if err := p.record(ctx, node, id, token); err != nil {
		return "", err
	}
	uid := m.GetUID()
	if err := p.client.Delete(ctx, m, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil {
		return "", fmt.Errorf("deleting Machine %s of node %s: %w", id, node.Name, err)
	}
	return id, nil
}

// Status reports the Machine's lifecycle: absent is Gone, deleting is
// Terminating, anything else Running (with Cluster API's phase as detail).
func (p *Provider) Status(ctx context.Context, node *corev1.Node) (provider.InstanceStatus, error) {
	key, m, err := p.find(ctx, provider.LatestNode(ctx, p.client, node))
	switch {
	case errors.Is(err, provider.ErrNotFound):
		return provider.InstanceStatus{State: provider.StateGone, Detail: fmt.Sprintf("no Machine owns node %s", node.Name)}, nil
	case err != nil:
		return provider.InstanceStatus{}, fmt.Errorf("status of node %s: %w", node.Name, err)
	case m == nil:
		return provider.InstanceStatus{State: provider.StateGone, ID: key.String(), Detail: "Machine " + key.String() + " is gone"}, nil
	case m.GetDeletionTimestamp() != nil:
		return provider.InstanceStatus{State: provider.StateTerminating, ID: key.String(), Detail: "Machine " + key.String() + " is being deleted"}, nil
	}
	phase, _, _ := unstructured.NestedString(m.Object, "status", "phase")
	return provider.InstanceStatus{State: provider.StateRunning, ID: key.String(), Detail: "phase " + phase}, nil
}

// record notes on the node which Machine this incident deletes.
func (p *Provider) record(ctx context.Context, node *corev1.Node, id, token string) error {
	err := provider.AnnotateNode(ctx, p.client, node, map[string]string{v1alpha1.AnnotationReplaceMachine: id, v1alpha1.AnnotationReplaceToken: token})
	if err != nil {
		return fmt.Errorf("recording Machine %s on node %s: %w", id, node.Name, err)
	}
	return nil
}
