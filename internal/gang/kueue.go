package gang

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// workloadIndex is one namespace's Kueue Workloads, by name and by the UID
// of the job each admits.
type workloadIndex struct {
	names  map[string]bool
	owners map[types.UID]string
}

// kueueWorkload finds the Workload that admitted a gang: the one a pod
// names (Kueue's prebuilt-workload label, which it sets on LeaderWorkerSet
// pods, or its pod-group label, which is the group's Workload's name), else
// the one owned by the gang's JobSet or Job (its controller reference or
// its job-uid label). Nil when Kueue is not served or admits no Workload
// for the gang.
func (c *call) kueueWorkload(ctx context.Context, p *corev1.Pod, cand *candidate) (*types.NamespacedName, error) {
	if c.api.workload.Empty() {
		return nil, nil
	}
	names := []string{p.Labels[LabelKueuePrebuiltWorkload], p.Labels[LabelKueuePodGroup]}
	if names[0] == "" && names[1] == "" && len(cand.owners) == 0 {
		return nil, nil
	}
	idx, err := c.workloadsIn(ctx, p.Namespace)
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		if n != "" && idx.names[n] {
			return &types.NamespacedName{Namespace: p.Namespace, Name: n}, nil
		}
	}
	for _, uid := range cand.owners {
		if n, ok := idx.owners[uid]; ok {
			return &types.NamespacedName{Namespace: p.Namespace, Name: n}, nil
		}
	}
	return nil, nil
}

// workloadsIn lists a namespace's Workloads once per call. Only their
// metadata is used, so whichever version the server prefers will do.
func (c *call) workloadsIn(ctx context.Context, ns string) (*workloadIndex, error) {
	if idx, ok := c.workloads[ns]; ok {
		return idx, nil
	}
	idx := &workloadIndex{names: map[string]bool{}, owners: map[types.UID]string{}}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(c.api.workload.GroupVersion().WithKind(c.api.workload.Kind + "List"))
	if err := c.f.reader.List(ctx, list, client.InNamespace(ns)); err != nil {
		if !meta.IsNoMatchError(err) {
			return nil, fmt.Errorf("listing Kueue Workloads in namespace %s: %w", ns, err)
		}
		// Kueue's CRD went away since discovery: no Workloads.
	}
	for i := range list.Items {
		wl := &list.Items[i]
		idx.names[wl.GetName()] = true
		for _, ref := range wl.GetOwnerReferences() {
			if ref.Controller != nil && *ref.Controller {
				idx.owners[ref.UID] = wl.GetName()
			}
		}
		if uid := wl.GetLabels()[LabelKueueJobUID]; uid != "" {
			if _, ok := idx.owners[types.UID(uid)]; !ok {
				idx.owners[types.UID(uid)] = wl.GetName()
			}
		}
	}
	c.workloads[ns] = idx
	return idx, nil
}
