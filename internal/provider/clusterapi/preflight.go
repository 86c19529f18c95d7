package clusterapi

import (
	"context"

	corev1 "k8s.io/api/core/v1"

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
	return provider.CheckAccessAndList(ctx, p.client, "provider clusterapi", needs, MachineGVK, "Cluster API "+MachineGVK.Version)
}
