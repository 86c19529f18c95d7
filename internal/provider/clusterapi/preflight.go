package clusterapi

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuheal/gpuheal/internal/provider"
)

// needs is what Replace and Status do in the API server: find the Machine
// (get, and list in every namespace when the node names none), delete it,
// and record it on the node first (patch). The rights are asked for in all
// namespaces, as the shipped ClusterRole grants them: the namespace a node
// names comes from its own annotations, which its kubelet can write, and a
// node must not be able to fail its policy's preflight.
var needs = []provider.Access{
	{Verb: "get", Group: MachineGVK.Group, Resource: "machines"},
	{Verb: "list", Group: MachineGVK.Group, Resource: "machines"},
	{Verb: "delete", Group: MachineGVK.Group, Resource: "machines"},
	{Verb: "patch", Resource: "nodes"},
}

// Preflight asks the API server whether the controller may do what a
// replace needs (SelfSubjectAccessReview), then lists one Machine to prove
// that Cluster API's Machines exist at all.
func (p *Provider) Preflight(ctx context.Context, _ []*corev1.Node) (string, error) {
	msg, err := provider.CheckAccess(ctx, p.client, "provider clusterapi", needs)
	if err != nil {
		return "", err
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(MachineGVK.GroupVersion().WithKind(MachineGVK.Kind + "List"))
	if err := p.client.List(ctx, list, client.Limit(1)); err != nil {
		if meta.IsNoMatchError(err) {
			return "", fmt.Errorf("provider clusterapi: the API server serves no %s (is Cluster API %s installed?): %w", MachineGVK, MachineGVK.Version, err)
		}
		return "", fmt.Errorf("provider clusterapi: listing Machines: %w", err)
	}
	return msg, nil
}
