package gang

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	fakediscovery "k8s.io/client-go/discovery/fake"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

var (
	workloadGVK = schema.GroupVersionKind{Group: "kueue.x-k8s.io", Version: "v1beta2", Kind: "Workload"}
	podGroupGVK = schema.GroupVersionKind{Group: "scheduling.volcano.sh", Version: "v1beta1", Kind: "PodGroup"}
)

// allAPIs is discovery of a cluster serving every kind the Finder knows.
func allAPIs() []*metav1.APIResourceList {
	return []*metav1.APIResourceList{
		{GroupVersion: "jobset.x-k8s.io/v1alpha2", APIResources: []metav1.APIResource{{Name: "jobsets", Kind: "JobSet", Namespaced: true}}},
		{GroupVersion: "leaderworkerset.x-k8s.io/v1", APIResources: []metav1.APIResource{{Name: "leaderworkersets", Kind: "LeaderWorkerSet", Namespaced: true}}},
		{GroupVersion: "kueue.x-k8s.io/v1beta2", APIResources: []metav1.APIResource{
			{Name: "workloads", Kind: "Workload", Namespaced: true}, {Name: "localqueues", Kind: "LocalQueue", Namespaced: true}}},
		{GroupVersion: "scheduling.volcano.sh/v1beta1", APIResources: []metav1.APIResource{{Name: "podgroups", Kind: "PodGroup", Namespaced: true}}},
	}
}

func testScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	for _, gvk := range []schema.GroupVersionKind{workloadGVK, podGroupGVK} {
		s.AddKnownTypeWithName(gvk, &unstructured.Unstructured{})
		s.AddKnownTypeWithName(gvk.GroupVersion().WithKind(gvk.Kind+"List"), &unstructured.UnstructuredList{})
	}
	return s
}

// env is a Finder over a fake client holding objs, with the APIs res
// served; lists counts the List calls the Finder makes, by kind.
type env struct {
	finder *Finder
	lists  map[string]int
	gets   map[string]int
}

func newEnv(t *testing.T, res []*metav1.APIResourceList, opts Options, objs ...client.Object) *env {
	t.Helper()
	e := &env{lists: map[string]int{}, gets: map[string]int{}}
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(objs...).
		WithInterceptorFuncs(interceptor.Funcs{
			List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
				gvk, _ := c.GroupVersionKindFor(list)
				e.lists[gvk.Kind]++
				return c.List(ctx, list, opts...)
			},
			Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				gvk, _ := c.GroupVersionKindFor(obj)
				e.gets[gvk.Kind]++
				return c.Get(ctx, key, obj, opts...)
			},
		}).Build()
	d := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{Resources: res}}
	f, err := NewFinder(c, d, opts)
	if err != nil {
		t.Fatal(err)
	}
	e.finder = f
	return e
}

func pod(ns, name, node string, labels, annotations map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + ns + "-" + name),
			Labels: labels, Annotations: annotations},
		Spec:   corev1.PodSpec{NodeName: node},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
}

func keys(ns string, names ...string) []types.NamespacedName {
	out := make([]types.NamespacedName, len(names))
	for i, n := range names {
		out[i] = types.NamespacedName{Namespace: ns, Name: n}
	}
	return out
}

func objects(pods ...*corev1.Pod) []client.Object {
	out := make([]client.Object, len(pods))
	for i, p := range pods {
		out[i] = p
	}
	return out
}

func workload(ns, name string, owner *metav1.OwnerReference, labels map[string]string) *unstructured.Unstructured {
	wl := &unstructured.Unstructured{}
	wl.SetGroupVersionKind(workloadGVK)
	wl.SetNamespace(ns)
	wl.SetName(name)
	wl.SetLabels(labels)
	if owner != nil {
		wl.SetOwnerReferences([]metav1.OwnerReference{*owner})
	}
	return wl
}

func gangs(t *testing.T, e *env, pods ...*corev1.Pod) map[types.UID]*Gang {
	t.Helper()
	in := make([]corev1.Pod, len(pods))
	for i, p := range pods {
		in[i] = *p
	}
	got, err := e.finder.Gangs(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestJobSet(t *testing.T) {
	t.Parallel()
	lbl := func(name, uid string) map[string]string {
		return map[string]string{LabelJobSetName: name, LabelJobSetUID: uid, LabelJobName: name + "-workers-0"}
	}
	var pods []*corev1.Pod
	for i := range 4 {
		pods = append(pods, pod("ml", fmt.Sprintf("train-w-%d", i), fmt.Sprintf("gpu-%d", i), lbl("train", "js-uid"), nil))
	}
	done := pod("ml", "train-w-old", "gpu-0", lbl("train", "js-uid"), nil)
	done.Status.Phase = corev1.PodSucceeded
	stale := pod("ml", "train-w-stale", "gpu-9", lbl("train", "older-uid"), nil)
	other := pod("other", "train-w-0", "gpu-0", lbl("train", "x"), nil)
	owner := &metav1.OwnerReference{APIVersion: "jobset.x-k8s.io/v1alpha2", Kind: "JobSet", Name: "train", UID: "js-uid", Controller: ptr.To(true)}
	e := newEnv(t, allAPIs(), Options{}, append(objects(append(pods, done, stale, other)...),
		workload("ml", "jobset-train-1a2b3", owner, nil))...)

	got := gangs(t, e, pods[0], pods[1], stale)
	want := &Gang{Kind: KindJobSet, Namespace: "ml", Name: "train",
		Members: keys("ml", "train-w-0", "train-w-1", "train-w-2", "train-w-3"),
		Nodes:   []string{"gpu-0", "gpu-1", "gpu-2", "gpu-3"},
		Kueue:   &types.NamespacedName{Namespace: "ml", Name: "jobset-train-1a2b3"}}
	if diff := cmp.Diff(want, got[pods[0].UID]); diff != "" {
		t.Errorf("gang (-want +got):\n%s", diff)
	}
	if got[pods[0].UID] != got[pods[1].UID] {
		t.Error("two pods of one JobSet got two Gang values")
	}
	// A pod of an older JobSet of the same name, still terminating, is a
	// gang of its own.
	wantStale := &Gang{Kind: KindJobSet, Namespace: "ml", Name: "train", Members: keys("ml", "train-w-stale"), Nodes: []string{"gpu-9"}}
	if diff := cmp.Diff(wantStale, got[stale.UID]); diff != "" {
		t.Errorf("gang of the older JobSet's pod (-want +got):\n%s", diff)
	}
	if e.lists["PodList"] != 2 {
		t.Errorf("listed pods %d times for two gangs, want 2", e.lists["PodList"])
	}
}

func TestLeaderWorkerSetGroup(t *testing.T) {
	t.Parallel()
	lbl := func(group, worker string) map[string]string {
		return map[string]string{LabelLWSName: "llm", LabelLWSGroupIndex: group, "leaderworkerset.sigs.k8s.io/worker-index": worker,
			LabelKueuePrebuiltWorkload: "leaderworkerset-llm-" + group + "-abcde", LabelKueuePodGroup: "leaderworkerset-llm-" + group + "-abcde"}
	}
	leader := pod("serve", "llm-1", "n1", lbl("1", "0"), nil)
	w1 := pod("serve", "llm-1-1", "n2", lbl("1", "1"), nil)
	w2 := pod("serve", "llm-1-2", "n3", lbl("1", "2"), nil)
	otherGroup := pod("serve", "llm-0", "n1", lbl("0", "0"), nil)
	e := newEnv(t, allAPIs(), Options{}, append(objects(leader, w1, w2, otherGroup),
		workload("serve", "leaderworkerset-llm-1-abcde", nil, nil))...)

	got := gangs(t, e, w1)
	want := &Gang{Kind: KindLeaderWorkerSet, Namespace: "serve", Name: "llm", Group: "1",
		Members: keys("serve", "llm-1", "llm-1-1", "llm-1-2"), Nodes: []string{"n1", "n2", "n3"},
		Kueue: &types.NamespacedName{Namespace: "serve", Name: "leaderworkerset-llm-1-abcde"}}
	if diff := cmp.Diff(want, got[w1.UID]); diff != "" {
		t.Errorf("gang (-want +got):\n%s", diff)
	}
	if s := got[w1.UID].String(); s != "LeaderWorkerSet serve/llm[1]" {
		t.Errorf("String() = %q", s)
	}
}

func indexedJob(ns, name, uid string, mode batchv1.CompletionMode, parallelism int32) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid)},
		Spec:       batchv1.JobSpec{CompletionMode: &mode, Parallelism: &parallelism},
	}
}

func jobPod(job *batchv1.Job, i int, node string) *corev1.Pod {
	p := pod(job.Namespace, fmt.Sprintf("%s-%d-x", job.Name, i), node, map[string]string{
		LabelJobName: job.Name, LabelJobControllerUID: string(job.UID), "batch.kubernetes.io/job-completion-index": fmt.Sprint(i),
	}, nil)
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: job.Name, UID: job.UID, Controller: ptr.To(true)}}
	return p
}

func TestIndexedJob(t *testing.T) {
	t.Parallel()
	indexed := indexedJob("ml", "pretrain", "job-1", batchv1.IndexedCompletion, 3)
	serial := indexedJob("ml", "serial", "job-2", batchv1.IndexedCompletion, 1)
	nonIndexed := indexedJob("ml", "batch", "job-3", batchv1.NonIndexedCompletion, 4)
	var objs []client.Object
	var ip, sp, np []*corev1.Pod
	for i := range 3 {
		ip = append(ip, jobPod(indexed, i, fmt.Sprintf("n%d", i)))
		sp = append(sp, jobPod(serial, i, "n0"))
		np = append(np, jobPod(nonIndexed, i, "n0"))
	}
	objs = append(objs, indexed, serial, nonIndexed)
	objs = append(objs, objects(append(append(ip, sp...), np...)...)...)
	owner := &metav1.OwnerReference{APIVersion: "batch/v1", Kind: "Job", Name: "pretrain", UID: "job-1", Controller: ptr.To(true)}
	objs = append(objs, workload("ml", "job-pretrain-12345", owner, nil))
	e := newEnv(t, allAPIs(), Options{}, objs...)

	got := gangs(t, e, ip[0], sp[0], np[0], np[1])
	want := &Gang{Kind: KindIndexedJob, Namespace: "ml", Name: "pretrain",
		Members: keys("ml", "pretrain-0-x", "pretrain-1-x", "pretrain-2-x"), Nodes: []string{"n0", "n1", "n2"},
		Kueue: &types.NamespacedName{Namespace: "ml", Name: "job-pretrain-12345"}}
	if diff := cmp.Diff(want, got[ip[0].UID]); diff != "" {
		t.Errorf("gang (-want +got):\n%s", diff)
	}
	if g := got[sp[0].UID]; g != nil {
		t.Errorf("a pod of an Indexed Job of parallelism 1 is in gang %v", g)
	}
	if g := got[np[0].UID]; g != nil {
		t.Errorf("a pod of a NonIndexed Job is in gang %v", g)
	}
	if e.gets["Job"] != 3 {
		t.Errorf("read Jobs %d times, want 3 (once each)", e.gets["Job"])
	}
}

func TestKueuePodGroup(t *testing.T) {
	t.Parallel()
	grp := map[string]string{LabelKueuePodGroup: "sweep"}
	total := map[string]string{AnnotationKueuePodGroupTotal: "2"}
	a := pod("ml", "sweep-a", "n1", grp, total)
	b := pod("ml", "sweep-b", "n2", grp, total)
	single := pod("ml", "solo", "n1", map[string]string{LabelKueuePodGroup: "solo"}, map[string]string{AnnotationKueuePodGroupTotal: "1"})
	e := newEnv(t, allAPIs(), Options{}, append(objects(a, b, single), workload("ml", "sweep", nil, nil), workload("ml", "solo", nil, nil))...)

	got := gangs(t, e, a, single)
	want := &Gang{Kind: KindKueuePodGroup, Namespace: "ml", Name: "sweep",
		Members: keys("ml", "sweep-a", "sweep-b"), Nodes: []string{"n1", "n2"},
		Kueue: &types.NamespacedName{Namespace: "ml", Name: "sweep"}}
	if diff := cmp.Diff(want, got[a.UID]); diff != "" {
		t.Errorf("gang (-want +got):\n%s", diff)
	}
	if g := got[single.UID]; g != nil {
		t.Errorf("a pod group of one pod is gang %v", g)
	}
}

func podGroup(ns, name string, minMember int64) *unstructured.Unstructured {
	pg := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"minMember": minMember}}}
	pg.SetGroupVersionKind(podGroupGVK)
	pg.SetNamespace(ns)
	pg.SetName(name)
	return pg
}

func TestVolcanoPodGroup(t *testing.T) {
	t.Parallel()
	ann := func(g string) map[string]string { return map[string]string{AnnotationVolcanoGroup: g} }
	m0 := pod("hpc", "mpi-master-0", "n1", nil, ann("mpi"))
	w0 := pod("hpc", "mpi-worker-0", "n2", nil, ann("mpi"))
	w1 := pod("hpc", "mpi-worker-1", "n3", nil, map[string]string{AnnotationVolcanoGroupAlt: "mpi"})
	web := pod("hpc", "web-abc", "n1", nil, ann("podgroup-rs-uid"))
	orphan := pod("hpc", "orphan", "n1", nil, ann("gone"))
	e := newEnv(t, allAPIs(), Options{}, append(objects(m0, w0, w1, web, orphan),
		podGroup("hpc", "mpi", 3), podGroup("hpc", "podgroup-rs-uid", 1))...)

	got := gangs(t, e, m0, w0, web, orphan)
	want := &Gang{Kind: KindVolcanoPodGroup, Namespace: "hpc", Name: "mpi",
		Members: keys("hpc", "mpi-master-0", "mpi-worker-0", "mpi-worker-1"), Nodes: []string{"n1", "n2", "n3"}}
	if diff := cmp.Diff(want, got[m0.UID]); diff != "" {
		t.Errorf("gang (-want +got):\n%s", diff)
	}
	for _, p := range []*corev1.Pod{web, orphan} {
		if g := got[p.UID]; g != nil {
			t.Errorf("pod %s is in gang %v", p.Name, g)
		}
	}
	if e.lists["PodList"] != 1 {
		t.Errorf("listed the namespace's pods %d times, want 1", e.lists["PodList"])
	}
}

func TestConfiguredLabel(t *testing.T) {
	t.Parallel()
	a := pod("ml", "mpi-a", "n1", map[string]string{"example.com/job": "run7"}, nil)
	b := pod("ml", "mpi-b", "n2", map[string]string{"example.com/job": "run7"}, nil)
	elsewhere := pod("ml2", "mpi-c", "n3", map[string]string{"example.com/job": "run7"}, nil)
	plain := pod("ml", "web", "n1", map[string]string{"app": "web"}, nil)
	e := newEnv(t, allAPIs(), Options{LabelKeys: []string{"example.com/job"}}, objects(a, b, elsewhere, plain)...)

	got := gangs(t, e, a, plain)
	want := &Gang{Kind: KindLabel, Namespace: "ml", Name: "example.com/job=run7",
		Members: keys("ml", "mpi-a", "mpi-b"), Nodes: []string{"n1", "n2"}}
	if diff := cmp.Diff(want, got[a.UID]); diff != "" {
		t.Errorf("gang (-want +got):\n%s", diff)
	}
	if len(got) != 1 {
		t.Errorf("got %d gangs, want 1: %v", len(got), got)
	}
	if _, err := NewFinder(nil, nil, Options{LabelKeys: []string{" "}}); err == nil {
		t.Error("an empty label key was accepted")
	}
}

// A JobSet's pods are also pods of its indexed child Jobs, and may carry a
// configured label too: the JobSet, the whole gang, wins.
func TestMostSpecificRuleWins(t *testing.T) {
	t.Parallel()
	child := indexedJob("ml", "train-workers-0", "job-uid", batchv1.IndexedCompletion, 2)
	var pods []*corev1.Pod
	for i := range 2 {
		p := jobPod(child, i, "n1")
		p.Labels[LabelJobSetName] = "train"
		p.Labels["example.com/job"] = "train"
		pods = append(pods, p)
	}
	e := newEnv(t, allAPIs(), Options{LabelKeys: []string{"example.com/job"}}, append(objects(pods...), child)...)
	if g := gangs(t, e, pods[0])[pods[0].UID]; g == nil || g.Kind != KindJobSet {
		t.Errorf("gang = %v, want the JobSet", g)
	}
	// Without JobSet's CRD the child Job is the gang.
	e = newEnv(t, nil, Options{LabelKeys: []string{"example.com/job"}}, append(objects(pods...), child)...)
	if g := gangs(t, e, pods[0])[pods[0].UID]; g == nil || g.Kind != KindIndexedJob {
		t.Errorf("gang = %v, want the indexed Job", g)
	}
}

// Without the CRDs, pods labelled for JobSet, LeaderWorkerSet, Kueue and
// Volcano are in no gang, there is no error, and each absence is logged
// once however many calls are made.
func TestAbsentCRDs(t *testing.T) {
	t.Parallel()
	p := pod("ml", "p", "n1", map[string]string{LabelJobSetName: "js", LabelLWSName: "l", LabelLWSGroupIndex: "0",
		LabelKueuePodGroup: "g"}, map[string]string{AnnotationVolcanoGroup: "pg"})
	q := pod("ml", "q", "n2", p.Labels, p.Annotations)
	e := newEnv(t, nil, Options{}, p, q)
	var buf bytes.Buffer
	ctx := logr.NewContext(context.Background(), funcr.New(func(_, args string) {
		buf.WriteString(args + "\n")
	}, funcr.Options{}))
	for range 3 {
		got, err := e.finder.Gangs(ctx, []corev1.Pod{*p})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 0 {
			t.Fatalf("gangs without CRDs: %v", got)
		}
	}
	for _, res := range []string{"jobsets.jobset.x-k8s.io", "leaderworkersets.leaderworkerset.x-k8s.io",
		"workloads.kueue.x-k8s.io", "podgroups.scheduling.volcano.sh"} {
		if n := strings.Count(buf.String(), res); n != 1 {
			t.Errorf("absence of %s logged %d times, want once:\n%s", res, n, buf.String())
		}
	}
}

// A CRD installed after the first call is recognised from the next one.
func TestCRDInstalledLater(t *testing.T) {
	t.Parallel()
	p := pod("ml", "p", "n1", map[string]string{LabelJobSetName: "js"}, nil)
	e := newEnv(t, nil, Options{}, p)
	if got := gangs(t, e, p); len(got) != 0 {
		t.Fatalf("gangs before the CRD: %v", got)
	}
	e.finder.discovery.(*fakediscovery.FakeDiscovery).Resources = allAPIs()[:1]
	if got := gangs(t, e, p); got[p.UID] == nil || got[p.UID].Kind != KindJobSet {
		t.Fatalf("gangs after the CRD: %v", got)
	}
}

func TestDiscoveryErrorIsReturned(t *testing.T) {
	t.Parallel()
	p := pod("ml", "p", "n1", nil, nil)
	e := newEnv(t, allAPIs(), Options{}, p)
	fd := e.finder.discovery.(*fakediscovery.FakeDiscovery)
	fd.PrependReactor("get", "group", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("connection refused")
	})
	if _, err := e.finder.Gangs(context.Background(), []corev1.Pod{*p}); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("err = %v, want discovery's error", err)
	}
}

// A gang of 10,000 pods on many nodes is listed once, whichever of its
// pods the node runs, and every member is reported.
func TestLargeGangReadOnce(t *testing.T) {
	t.Parallel()
	const n = 10000
	lbl := map[string]string{LabelJobSetName: "huge", LabelJobSetUID: "u"}
	var objs []client.Object
	var local []*corev1.Pod
	for i := range n {
		p := pod("ml", fmt.Sprintf("huge-%05d", i), fmt.Sprintf("n%04d", i/8), lbl, nil)
		objs = append(objs, p)
		if i/8 == 7 {
			local = append(local, p)
		}
	}
	e := newEnv(t, allAPIs(), Options{}, objs...)
	got := gangs(t, e, local...)
	g := got[local[0].UID]
	if g == nil || len(g.Members) != n || len(g.Nodes) != n/8 {
		t.Fatalf("gang = %v with %d members on %d nodes", g, len(g.Members), len(g.Nodes))
	}
	if e.lists["PodList"] != 1 || e.lists["WorkloadList"] != 1 {
		t.Errorf("lists = %v, want one of pods and one of Workloads", e.lists)
	}
}
