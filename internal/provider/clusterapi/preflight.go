package clusterapi

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuheal/gpuheal/internal/provider"
)

// maxNamespaces bounds the access reviews of one preflight: a policy's
// nodes rarely span more than a few clusters' namespaces.
const maxNamespaces = 8

// Preflight asks the API server whether the controller may do what a
// replace needs (SelfSubjectAccessReview): list Machines in every namespace
// (find falls back to that), get and delete them in the namespaces the
// nodes name (all namespaces when none does), and patch nodes; then it
// lists one Machine to prove that Cluster API's Machines exist at all.
func (p *Provider) Preflight(ctx context.Context, nodes []*corev1.Node) (string, error) {
	var namespaces []string
	for _, n := range nodes {
		if ns := n.Annotations[ClusterNamespaceAnnotation]; ns != "" && !slices.Contains(namespaces, ns) && len(namespaces) < maxNamespaces {
			namespaces = append(namespaces, ns)
		}
	}
	if len(namespaces) == 0 {
		namespaces = []string{""}
	}
	want := []provider.Access{{Verb: "list", Group: MachineGVK.Group, Resource: "machines"}}
	for _, ns := range namespaces {
		want = append(want,
			provider.Access{Verb: "get", Group: MachineGVK.Group, Resource: "machines", Namespace: ns},
			provider.Access{Verb: "delete", Group: MachineGVK.Group, Resource: "machines", Namespace: ns})
	}
	want = append(want, provider.Access{Verb: "patch", Resource: "nodes"})
	msg, err := provider.CheckAccess(ctx, p.client, "provider clusterapi", want)
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
