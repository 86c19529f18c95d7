package gang

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// call is the state of one Gangs call: what it has read, so that nothing is
// read twice however many pods of a gang the node runs.
type call struct {
	f   *Finder
	api apis

	gangs     map[string]*Gang                      // by gangKey
	jobs      map[types.NamespacedName]*batchv1.Job // nil: not found
	podGroups map[types.NamespacedName]int64        // minMember; -1: not found
	nsPods    map[string][]corev1.Pod               // every pod of a namespace
	workloads map[string]*workloadIndex             // by namespace
}

func newCall(f *Finder, api apis) *call {
	return &call{
		f: f, api: api,
		gangs:     map[string]*Gang{},
		jobs:      map[types.NamespacedName]*batchv1.Job{},
		podGroups: map[types.NamespacedName]int64{},
		nsPods:    map[string][]corev1.Pod{},
		workloads: map[string]*workloadIndex{},
	}
}

// candidate is a gang a rule says a pod belongs to, before its members are
// read.
type candidate struct {
	gang *Gang
	// selector lists the members by label in the gang's namespace; nil
	// means list the namespace and keep the pods match accepts.
	selector client.MatchingLabels
	match    func(*corev1.Pod) bool
	// owners are UIDs a Kueue Workload of the gang may be owned by.
	owners []types.UID
}

// key tells gangs apart within a call: by identity, and by selector too, so
// that a JobSet and an older one of the same name whose pods still
// terminate on the node are two gangs.
func (c candidate) key() string {
	return strings.Join([]string{c.gang.Kind, c.gang.Namespace, c.gang.Name, c.gang.Group,
		labels.SelectorFromSet(labels.Set(c.selector)).String()}, "\x00")
}

// gangOf returns the gang of p, or nil. The rules are tried from the most
// specific to the least; the first that claims the pod decides (a JobSet's
// pods are also an indexed Job's, and the JobSet is the whole gang).
func (c *call) gangOf(ctx context.Context, p *corev1.Pod) (*Gang, error) {
	rules := []func(context.Context, *corev1.Pod) (*candidate, error){
		c.jobSet, c.leaderWorkerSet, c.indexedJob, c.kueuePodGroup, c.volcanoPodGroup, c.label,
	}
	for _, rule := range rules {
		cand, err := rule(ctx, p)
		if err != nil {
			return nil, err
		}
		if cand == nil {
			continue
		}
		if g, ok := c.gangs[cand.key()]; ok {
			return g, nil
		}
		members, err := c.members(ctx, cand)
		if err != nil {
			return nil, err
		}
		finish(cand.gang, members, p)
		if cand.gang.Kueue, err = c.kueueWorkload(ctx, p, cand); err != nil {
			return nil, err
		}
		c.gangs[cand.key()] = cand.gang
		return cand.gang, nil
	}
	return nil, nil
}

// members lists a candidate's pods: by label selector (one List of just
// the gang), or by filtering the namespace's pods read once per call.
func (c *call) members(ctx context.Context, cand *candidate) ([]corev1.Pod, error) {
	ns := cand.gang.Namespace
	if cand.selector != nil {
		var list corev1.PodList
		if err := c.f.reader.List(ctx, &list, client.InNamespace(ns), cand.selector); err != nil {
			return nil, fmt.Errorf("listing the pods of %s: %w", cand.gang, err)
		}
		return list.Items, nil
	}
	all, ok := c.nsPods[ns]
	if !ok {
		var list corev1.PodList
		if err := c.f.reader.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return nil, fmt.Errorf("listing the pods of namespace %s for %s: %w", ns, cand.gang, err)
		}
		all = list.Items
		c.nsPods[ns] = all
	}
	var out []corev1.Pod
	for i := range all {
		if cand.match(&all[i]) {
			out = append(out, all[i])
		}
	}
	return out, nil
}

// jobSet: pods labelled with a JobSet's name, narrowed to that JobSet's
// UID when the pod carries it, so that the pods of a deleted JobSet of the
// same name still terminating are not counted.
func (c *call) jobSet(_ context.Context, p *corev1.Pod) (*candidate, error) {
	name := p.Labels[LabelJobSetName]
	if c.api.jobSet.Empty() || name == "" {
		return nil, nil
	}
	sel := client.MatchingLabels{LabelJobSetName: name}
	var owners []types.UID
	if uid := p.Labels[LabelJobSetUID]; uid != "" {
		sel[LabelJobSetUID] = uid
		owners = append(owners, types.UID(uid))
	}
	return &candidate{
		gang:     &Gang{Kind: KindJobSet, Namespace: p.Namespace, Name: name},
		selector: sel,
		owners:   owners,
	}, nil
}

// leaderWorkerSet: the leader and workers of one group share the set's
// name and the group index.
func (c *call) leaderWorkerSet(_ context.Context, p *corev1.Pod) (*candidate, error) {
	name, group := p.Labels[LabelLWSName], p.Labels[LabelLWSGroupIndex]
	if c.api.leaderWorkerSet.Empty() || name == "" || group == "" {
		return nil, nil
	}
	return &candidate{
		gang:     &Gang{Kind: KindLeaderWorkerSet, Namespace: p.Namespace, Name: name, Group: group},
		selector: client.MatchingLabels{LabelLWSName: name, LabelLWSGroupIndex: group},
	}, nil
}

// indexedJob: a Job whose pods each hold one completion index and run
// side by side; an Indexed Job that runs its indexes one at a time
// (parallelism 1) is no gang.
func (c *call) indexedJob(ctx context.Context, p *corev1.Pod) (*candidate, error) {
	name := jobName(p)
	if name == "" {
		return nil, nil
	}
	job, err := c.job(ctx, types.NamespacedName{Namespace: p.Namespace, Name: name})
	if err != nil || job == nil {
		return nil, err
	}
	if job.Spec.CompletionMode == nil || *job.Spec.CompletionMode != batchv1.IndexedCompletion ||
		job.Spec.Parallelism == nil || *job.Spec.Parallelism <= 1 {
		return nil, nil
	}
	return &candidate{
		gang:     &Gang{Kind: KindIndexedJob, Namespace: job.Namespace, Name: job.Name},
		selector: client.MatchingLabels{LabelJobControllerUID: string(job.UID)},
		owners:   []types.UID{job.UID},
	}, nil
}

// jobName is the Job that controls p: its controller reference, else its
// job-name label.
func jobName(p *corev1.Pod) string {
	if ref := metav1.GetControllerOf(p); ref != nil {
		if ref.Kind == "Job" && strings.HasPrefix(ref.APIVersion, "batch/") {
			return ref.Name
		}
		return ""
	}
	if n := p.Labels[LabelJobName]; n != "" {
		return n
	}
	return p.Labels[LabelLegacyJobName]
}

func (c *call) job(ctx context.Context, key types.NamespacedName) (*batchv1.Job, error) {
	if job, ok := c.jobs[key]; ok {
		return job, nil
	}
	job := &batchv1.Job{}
	if err := c.f.reader.Get(ctx, key, job); err != nil {
		if !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("reading Job %s: %w", key, err)
		}
		job = nil
	}
	c.jobs[key] = job
	return job, nil
}

// kueuePodGroup: plain pods Kueue admits together, when the group is of
// more than one pod.
func (c *call) kueuePodGroup(_ context.Context, p *corev1.Pod) (*candidate, error) {
	name := p.Labels[LabelKueuePodGroup]
	if c.api.workload.Empty() || name == "" {
		return nil, nil
	}
	if n, err := strconv.Atoi(p.Annotations[AnnotationKueuePodGroupTotal]); err == nil && n <= 1 {
		return nil, nil
	}
	return &candidate{
		gang:     &Gang{Kind: KindKueuePodGroup, Namespace: p.Namespace, Name: name},
		selector: client.MatchingLabels{LabelKueuePodGroup: name},
	}, nil
}

// volcanoPodGroup: pods annotated with a PodGroup whose minMember is above
// 1. Volcano makes a PodGroup of minMember 1 for every pod it schedules
// that names none; those are not gangs. Annotations cannot be selected,
// so the namespace's pods are read (once per call) and filtered.
func (c *call) volcanoPodGroup(ctx context.Context, p *corev1.Pod) (*candidate, error) {
	name := volcanoGroup(p)
	if c.api.podGroup.Empty() || name == "" {
		return nil, nil
	}
	key := types.NamespacedName{Namespace: p.Namespace, Name: name}
	minMember, ok := c.podGroups[key]
	if !ok {
		pg := &unstructured.Unstructured{}
		pg.SetGroupVersionKind(c.api.podGroup)
		switch err := c.f.reader.Get(ctx, key, pg); {
		case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
			minMember = -1
		case err != nil:
			return nil, fmt.Errorf("reading Volcano PodGroup %s: %w", key, err)
		default:
			minMember, _, _ = unstructured.NestedInt64(pg.Object, "spec", "minMember")
		}
		c.podGroups[key] = minMember
	}
	if minMember <= 1 {
		return nil, nil
	}
	return &candidate{
		gang:  &Gang{Kind: KindVolcanoPodGroup, Namespace: p.Namespace, Name: name},
		match: func(q *corev1.Pod) bool { return volcanoGroup(q) == name },
	}, nil
}

func volcanoGroup(p *corev1.Pod) string {
	if n := p.Annotations[AnnotationVolcanoGroup]; n != "" {
		return n
	}
	return p.Annotations[AnnotationVolcanoGroupAlt]
}

// label: pods of one namespace sharing the value of a configured key.
func (c *call) label(_ context.Context, p *corev1.Pod) (*candidate, error) {
	for _, k := range c.f.opts.LabelKeys {
		if v := p.Labels[k]; v != "" {
			return &candidate{
				gang:     &Gang{Kind: KindLabel, Namespace: p.Namespace, Name: k + "=" + v},
				selector: client.MatchingLabels{k: v},
			}, nil
		}
	}
	return nil, nil
}
