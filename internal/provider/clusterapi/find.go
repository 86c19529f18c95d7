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
// The node's own annotations (ours first, then Cluster API's) name it
// directly; otherwise the Machine whose status.nodeRef is the node. Without
// any, the error wraps provider.ErrNotFound.
func (p *Provider) find(ctx context.Context, node *corev1.Node) (types.NamespacedName, *unstructured.Unstructured, error) {
	if id := node.Annotations[v1alpha1.AnnotationReplaceMachine]; id != "" {
		if ns, name, ok := strings.Cut(id, "/"); ok {
			return p.get(ctx, types.NamespacedName{Namespace: ns, Name: name})
		}
	}
	annotated := node.Annotations[MachineAnnotation]
	if ns := node.Annotations[ClusterNamespaceAnnotation]; annotated != "" && ns != "" {
		return p.get(ctx, types.NamespacedName{Namespace: ns, Name: annotated})
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
		// Without the namespace annotation the Machine's name alone is
		// still a match, in whatever namespace it lives.
		ref, _, _ := unstructured.NestedString(m.Object, "status", "nodeRef", "name")
		if ref == node.Name || (annotated != "" && m.GetName() == annotated) {
			return client.ObjectKeyFromObject(m), m, nil
		}
	}
	return types.NamespacedName{}, nil, fmt.Errorf("node has no %s annotation and no Machine's status.nodeRef names it: %w",
		MachineAnnotation, provider.ErrNotFound)
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
