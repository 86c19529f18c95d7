package gang

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Discovery is the part of client-go's discovery.DiscoveryInterfaceWithContext
// a Finder uses (the discovery client, its memory-cached wrapper and its
// fake all have it).
type Discovery interface {
	ServerGroupsWithContext(ctx context.Context) (*metav1.APIGroupList, error)
	ServerResourcesForGroupVersionWithContext(ctx context.Context, groupVersion string) (*metav1.APIResourceList, error)
}

// The CRD kinds a Finder looks for. Only Workload and PodGroup objects are
// read; JobSet and LeaderWorkerSet pods carry all the Finder needs in their
// labels, so for those two discovery only says whether the kind exists.
var (
	jobSetResource          = schema.GroupResource{Group: "jobset.x-k8s.io", Resource: "jobsets"}
	leaderWorkerSetResource = schema.GroupResource{Group: "leaderworkerset.x-k8s.io", Resource: "leaderworkersets"}
	workloadResource        = schema.GroupResource{Group: "kueue.x-k8s.io", Resource: "workloads"}
	podGroupResource        = schema.GroupResource{Group: "scheduling.volcano.sh", Resource: "podgroups"}
)

// apis says which kinds the cluster serves; a zero GroupVersionKind is a
// kind it does not.
type apis struct {
	jobSet, leaderWorkerSet, workload, podGroup schema.GroupVersionKind
}

// served asks discovery which of the CRD kinds exist, in the version the
// server prefers, and logs each kind's absence (and a later arrival) once.
func (f *Finder) served(ctx context.Context) (apis, error) {
	groups, err := f.discovery.ServerGroupsWithContext(ctx)
	if err != nil {
		return apis{}, fmt.Errorf("discovering API groups for gang recognition: %w", err)
	}
	var a apis
	for _, want := range []struct {
		res  schema.GroupResource
		kind string
		into *schema.GroupVersionKind
	}{
		{jobSetResource, KindJobSet, &a.jobSet},
		{leaderWorkerSetResource, KindLeaderWorkerSet, &a.leaderWorkerSet},
		{workloadResource, "Workload", &a.workload},
		{podGroupResource, "PodGroup", &a.podGroup},
	} {
		gvk, err := f.find(ctx, groups, want.res)
		if err != nil {
			return apis{}, err
		}
		*want.into = gvk
		f.note(ctx, want.res, !gvk.Empty())
	}
	return a, nil
}

// find returns the kind serving res, in the group's preferred version when
// that serves it, else in the first version that does; zero when none.
func (f *Finder) find(ctx context.Context, groups *metav1.APIGroupList, res schema.GroupResource) (schema.GroupVersionKind, error) {
	for _, g := range groups.Groups {
		if g.Name != res.Group {
			continue
		}
		versions := []string{g.PreferredVersion.GroupVersion}
		for _, v := range g.Versions {
			if v.GroupVersion != g.PreferredVersion.GroupVersion {
				versions = append(versions, v.GroupVersion)
			}
		}
		for _, gv := range versions {
			if gv == "" {
				continue
			}
			list, err := f.discovery.ServerResourcesForGroupVersionWithContext(ctx, gv)
			if apierrors.IsNotFound(err) {
				// The group went away between the two requests (a CRD
				// deleted): as good as absent.
				continue
			}
			if err != nil {
				return schema.GroupVersionKind{}, fmt.Errorf("discovering the resources of %s for gang recognition: %w", gv, err)
			}
			for _, r := range list.APIResources {
				if r.Name == res.Resource {
					parsed, err := schema.ParseGroupVersion(gv)
					if err != nil {
						return schema.GroupVersionKind{}, fmt.Errorf("discovery named group version %q: %w", gv, err)
					}
					return parsed.WithKind(r.Kind), nil
				}
			}
		}
	}
	return schema.GroupVersionKind{}, nil
}

// note logs the first time a kind is found unserved, and again when it is
// served after that, so that a cluster without Kueue says so once rather
// than on every drain.
func (f *Finder) note(ctx context.Context, res schema.GroupResource, served bool) {
	f.mu.Lock()
	was, known := f.absent[res.String()]
	f.absent[res.String()] = !served
	f.mu.Unlock()
	log := logr.FromContextOrDiscard(ctx)
	switch {
	case !served && (!known || !was):
		log.Info("API not served; gangs of this kind are not recognised", "resource", res.String())
	case served && known && was:
		log.Info("API now served; gangs of this kind are recognised", "resource", res.String())
	}
}
