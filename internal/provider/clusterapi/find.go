package clusterapi

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/provider"
)

// find returns the key of the Machine that owns node and the object itself;
// the object is nil when the node names a Machine that no longer exists.
//
// The node's annotations (ours first, then Cluster API's) say which
// Machine to look at, but a node's kubelet or agent can write them, so
// only the Machine's status.nodeRef proves ownership: a named Machine whose
// nodeRef is another node is refused with provider.ErrNotOwned, as is any
// control-plane Machine. Without annotations, the Machine whose nodeRef is
// the node. Without any, the error wraps provider.ErrNotFound.
func (p *Provider) find(ctx context.Context, node *corev1.Node) (types.NamespacedName, *unstructured.Unstructured, error) {
	if id := node.Annotations[v1alpha1.AnnotationReplaceMachine]; id != "" {
		if ns, name, ok := strings.Cut(id, "/"); ok {
			return p.getOwned(ctx, node, types.NamespacedName{Namespace: ns, Name: name}, "annotation "+v1alpha1.AnnotationReplaceMachine)
		}
	}
	if name, ns := node.Annotations[MachineAnnotation], node.Annotations[ClusterNamespaceAnnotation]; name != "" && ns != "" {
		return p.getOwned(ctx, node, types.NamespacedName{Namespace: ns, Name: name}, "annotation "+MachineAnnotation)
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(MachineGVK.GroupVersion().WithKind(MachineGVK.Kind + "List"))
	if err := p.client.List(ctx, list); err != nil {
		if meta.IsNoMatchError(err) {
			return types.NamespacedName{}, nil, fmt.Errorf("listing Machines (is Cluster API %s installed?): %w", MachineGVK.Version, err)
		}
		return types.NamespacedName{}, nil, fmt.Errorf("listing Machines: %w", err)
	}
	for i := range list.Items {
		m := &list.Items[i]
		if nodeRef(m) == node.Name && sameInstance(node, m) {
			return client.ObjectKeyFromObject(m), m, verify(node, m, "status.nodeRef")
		}
	}
	return types.NamespacedName{}, nil, fmt.Errorf("no Machine's status.nodeRef names node %s: %w", node.Name, provider.ErrNotFound)
}

// getOwned reads the Machine a node's annotation (named by via) points at
// and verifies that it is the node's.
func (p *Provider) getOwned(ctx context.Context, node *corev1.Node, key types.NamespacedName, via string) (types.NamespacedName, *unstructured.Unstructured, error) {
	key, m, err := p.get(ctx, key)
	if err != nil || m == nil {
		return key, m, err
	}
	return key, m, verify(node, m, via)
}

// verify refuses a Machine that is not provably node's, or that runs the
// control plane (Cluster API's control plane provider, not gpuheal, decides
// when one of those goes).
func verify(node *corev1.Node, m *unstructured.Unstructured, via string) error {
	id := client.ObjectKeyFromObject(m).String()
	if ref := nodeRef(m); ref != node.Name {
		return fmt.Errorf("node %s points at Machine %s by its %s, but that Machine's status.nodeRef is %q; refusing to delete it: %w",
			node.Name, id, via, ref, provider.ErrNotOwned)
	}
	if !sameInstance(node, m) {
		return fmt.Errorf("refusing to delete Machine %s: it names node %s in status.nodeRef but its spec.providerID %q is not the node's %q (a Machine of another cluster with the same node name?): %w",
			id, node.Name, machineProviderID(m), node.Spec.ProviderID, provider.ErrNotOwned)
	}
	if _, ok := m.GetLabels()[v1alpha1.LabelClusterAPIControlPlane]; ok {
		return fmt.Errorf("refusing to delete Machine %s of node %s: it is a control-plane Machine (label %s): %w",
			id, node.Name, v1alpha1.LabelClusterAPIControlPlane, provider.ErrNotOwned)
	}
	return nil
}

// sameInstance: a node that knows its instance (spec.providerID) is the
// Machine's only if the Machine's spec.providerID is the same. Node names
// repeat across the clusters a management cluster holds Machines of.
func sameInstance(node *corev1.Node, m *unstructured.Unstructured) bool {
	return node.Spec.ProviderID == "" || machineProviderID(m) == node.Spec.ProviderID
}

func machineProviderID(m *unstructured.Unstructured) string {
	id, _, _ := unstructured.NestedString(m.Object, "spec", "providerID")
	return id
}

func nodeRef(m *unstructured.Unstructured) string {
	ref, _, _ := unstructured.NestedString(m.Object, "status", "nodeRef", "name")
	return ref
}

// get reads one Machine; absent is a nil object, not an error.
func (p *Provider) get(ctx context.Context, key types.NamespacedName) (types.NamespacedName, *unstructured.Unstructured, error) {
	m := &unstructured.Unstructured{}
	m.SetGroupVersionKind(MachineGVK)
	if err := p.client.Get(ctx, key, m); err != nil {
		if apierrors.IsNotFound(err) {
			return key, nil, nil
		}
		return types.NamespacedName{}, nil, fmt.Errorf("reading Machine %s: %w", key, err)
	}
	return key, m, nil
}
