//go:build integration

package gang_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/gpuheal/gpuheal/internal/gang"
	"github.com/gpuheal/gpuheal/internal/testenv"
	"github.com/gpuheal/gpuheal/internal/testenv/testcluster"
)

// TestGangsOnAPIServer installs the real CRDs of JobSet, LeaderWorkerSet,
// Kueue and Volcano (testdata/crds), creates their objects as their
// controllers would leave them (envtest runs none), and finds each gang from
// the pods of one node.
func TestGangsOnAPIServer(t *testing.T) {
	t.Parallel()
	env := testcluster.Start(t, testenv.Options{CRDDir: "testdata/crds"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := env.Client
	mustCreate(ctx, t, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ml"}})

	// A JobSet of one replicated Job of 8 indexed pods, one per node,
	// admitted by Kueue.
	js := mustCreateYAML(ctx, t, c, `
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: llama, namespace: ml}
spec:
  replicatedJobs:
  - name: workers
    replicas: 1
    template:
      spec:
        completionMode: Indexed
        parallelism: 8
        completions: 8
        template:
          spec:
            restartPolicy: Never
            containers: [{name: trainer, image: trainer:1}]
`)
	child := indexedJob(ctx, t, c, "llama-workers-0", 8, map[string]string{
		gang.LabelJobSetName: "llama", gang.LabelJobSetUID: string(js.GetUID()),
	}, ownerRef(js))
	var jsPods []*corev1.Pod
	for i := range 8 {
		jsPods = append(jsPods, jobPod(ctx, t, c, child, i, fmt.Sprintf("gpu-node-%d", i)))
	}
	jsWorkload := mustCreateYAML(ctx, t, c, workloadYAML("jobset-llama-5c3e1", 8))
	setOwner(ctx, t, c, jsWorkload, js)

	// An indexed Job of 4, admitted by Kueue, and an indexed Job that runs
	// one index at a time (no gang).
	pretrain := indexedJob(ctx, t, c, "pretrain", 4, nil, nil)
	var jobPods []*corev1.Pod
	for i := range 4 {
		jobPods = append(jobPods, jobPod(ctx, t, c, pretrain, i, fmt.Sprintf("gpu-node-%d", 3+i)))
	}
	jobWorkload := mustCreateYAML(ctx, t, c, workloadYAML("job-pretrain-0a1b2", 4))
	setOwner(ctx, t, c, jobWorkload, pretrain)
	serial := indexedJob(ctx, t, c, "serial", 1, nil, nil)
	serialPod := jobPod(ctx, t, c, serial, 0, "gpu-node-3")

	// A LeaderWorkerSet of two groups of a leader and 3 workers.
	lws := mustCreateYAML(ctx, t, c, `
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata: {name: serve, namespace: ml}
spec:
  replicas: 2
  leaderWorkerTemplate:
    size: 4
    workerTemplate:
      spec:
        containers: [{name: vllm, image: vllm:1}]
`)
	var lwsPods []*corev1.Pod
	for g := range 2 {
		for w := range 4 {
			name := fmt.Sprintf("serve-%d", g)
			if w > 0 {
				name = fmt.Sprintf("serve-%d-%d", g, w)
			}
			lwsPods = append(lwsPods, mustPod(ctx, t, c, name, fmt.Sprintf("gpu-node-%d", 2*g+w%2), map[string]string{
				gang.LabelLWSName: lws.GetName(), gang.LabelLWSGroupIndex: fmt.Sprint(g),
				"leaderworkerset.sigs.k8s.io/worker-index": fmt.Sprint(w),
			}, nil))
		}
	}

	// A Kueue group of 2 plain pods, its Workload named after the group.
	mustCreateYAML(ctx, t, c, workloadYAML("sweep", 2))
	var sweep []*corev1.Pod
	for i := range 2 {
		sweep = append(sweep, mustPod(ctx, t, c, fmt.Sprintf("sweep-%d", i), fmt.Sprintf("gpu-node-%d", 3-i),
			map[string]string{gang.LabelKueuePodGroup: "sweep"}, map[string]string{gang.AnnotationKueuePodGroupTotal: "2"}))
	}

	// A Volcano PodGroup of 3, and the PodGroup of one Volcano makes for a
	// pod of a Deployment (no gang).
	mustCreateYAML(ctx, t, c, `
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: mpi, namespace: ml}
spec: {minMember: 3}
`)
	mustCreateYAML(ctx, t, c, `
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: podgroup-0f3c, namespace: ml}
spec: {minMember: 1}
`)
	var mpi []*corev1.Pod
	for i := range 3 {
		mpi = append(mpi, mustPod(ctx, t, c, fmt.Sprintf("mpi-%d", i), fmt.Sprintf("gpu-node-%d", 3+i), nil,
			map[string]string{gang.AnnotationVolcanoGroup: "mpi"}))
	}
	web := mustPod(ctx, t, c, "web-7d9f", "gpu-node-3", nil, map[string]string{gang.AnnotationVolcanoGroup: "podgroup-0f3c"})

	// The pods of node gpu-node-3, as the drain reads them.
	var onNode corev1.PodList
	if err := c.List(ctx, &onNode, client.MatchingFields{"spec.nodeName": "gpu-node-3"}); err != nil {
		t.Fatal(err)
	}
	d, err := discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	f, err := gang.NewFinder(c, d, gang.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := f.Gangs(ctx, onNode.Items)
	if err != nil {
		t.Fatal(err)
	}

	nodes := func(idx ...int) []string {
		var out []string
		for _, i := range idx {
			out = append(out, fmt.Sprintf("gpu-node-%d", i))
		}
		return out
	}
	for _, tc := range []struct {
		pod  *corev1.Pod
		want *gang.Gang
	}{
		{jsPods[3], &gang.Gang{Kind: gang.KindJobSet, Namespace: "ml", Name: "llama",
			Members: names(jsPods), Nodes: nodes(0, 1, 2, 3, 4, 5, 6, 7),
			Kueue: &types.NamespacedName{Namespace: "ml", Name: "jobset-llama-5c3e1"}}},
		{jobPods[0], &gang.Gang{Kind: gang.KindIndexedJob, Namespace: "ml", Name: "pretrain",
			Members: names(jobPods), Nodes: nodes(3, 4, 5, 6),
			Kueue: &types.NamespacedName{Namespace: "ml", Name: "job-pretrain-0a1b2"}}},
		// Group 1 only: group 0 runs on gpu-node-0 and -1.
		{lwsPods[5], &gang.Gang{Kind: gang.KindLeaderWorkerSet, Namespace: "ml", Name: "serve", Group: "1",
			Members: names(lwsPods[4:]), Nodes: nodes(2, 3)}},
		{sweep[0], &gang.Gang{Kind: gang.KindKueuePodGroup, Namespace: "ml", Name: "sweep",
			Members: names(sweep), Nodes: nodes(2, 3), Kueue: &types.NamespacedName{Namespace: "ml", Name: "sweep"}}},
		{mpi[0], &gang.Gang{Kind: gang.KindVolcanoPodGroup, Namespace: "ml", Name: "mpi",
			Members: names(mpi), Nodes: nodes(3, 4, 5)}},
		{serialPod, nil},
		{web, nil},
	} {
		if diff := cmp.Diff(tc.want, got[tc.pod.UID]); diff != "" {
			t.Errorf("gang of pod %s (-want +got):\n%s", tc.pod.Name, diff)
		}
	}
	if len(got) != 6 {
		t.Errorf("%d of the node's %d pods are in gangs, want 6", len(got), len(onNode.Items))
	}
}

// TestNoGangsWithoutCRDs: on an API server without the CRDs, pods that
// carry JobSet, LeaderWorkerSet, Kueue and Volcano labels are in no gang,
// and that is no error.
func TestNoGangsWithoutCRDs(t *testing.T) {
	t.Parallel()
	env := testcluster.Start(t, testenv.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := env.Client
	mustCreate(ctx, t, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ml"}})
	var pods []corev1.Pod
	for i := range 4 {
		p := mustPod(ctx, t, c, fmt.Sprintf("p-%d", i), "gpu-node-0", map[string]string{
			gang.LabelJobSetName: "llama", gang.LabelLWSName: "serve", gang.LabelLWSGroupIndex: "0",
			gang.LabelKueuePodGroup: "sweep",
		}, map[string]string{gang.AnnotationVolcanoGroup: "mpi", gang.AnnotationKueuePodGroupTotal: "4"})
		pods = append(pods, *p)
	}
	d, err := discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	f, err := gang.NewFinder(c, d, gang.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := f.Gangs(ctx, pods)
	if err != nil {
		t.Fatalf("without the CRDs: %v", err)
	}
	if len(got) != 0 {
		t.Errorf("gangs without the CRDs: %v", got)
	}
}

func mustCreate(ctx context.Context, t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	if err := c.Create(ctx, obj); err != nil {
		t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}

func mustCreateYAML(ctx context.Context, t *testing.T, c client.Client, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatal(err)
	}
	mustCreate(ctx, t, c, u)
	return u
}

func workloadYAML(name string, count int) string {
	return fmt.Sprintf(`
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {name: %s, namespace: ml}
spec:
  queueName: gpus
  podSets:
  - name: main
    count: %d
    template:
      spec:
        containers: [{name: main, image: trainer:1}]
`, name, count)
}

func ownerRef(obj client.Object) *metav1.OwnerReference {
	gvk := obj.GetObjectKind().GroupVersionKind()
	return &metav1.OwnerReference{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind,
		Name: obj.GetName(), UID: obj.GetUID(), Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
}

// setOwner makes owner the controller of obj, as Kueue does for the
// Workload of a job.
func setOwner(ctx context.Context, t *testing.T, c client.Client, obj *unstructured.Unstructured, owner client.Object) {
	t.Helper()
	if owner.GetObjectKind().GroupVersionKind().Empty() {
		gvks, _, err := c.Scheme().ObjectKinds(owner)
		if err != nil {
			t.Fatal(err)
		}
		owner.GetObjectKind().SetGroupVersionKind(gvks[0])
	}
	base := obj.DeepCopy()
	obj.SetOwnerReferences([]metav1.OwnerReference{*ownerRef(owner)})
	if err := c.Patch(ctx, obj, client.MergeFrom(base)); err != nil {
		t.Fatalf("setting the owner of %s: %v", obj.GetName(), err)
	}
}

// indexedJob creates an Indexed Job as its creator (a user, JobSet) would;
// the API server adds its controller-uid selector and labels.
func indexedJob(ctx context.Context, t *testing.T, c client.Client, name string, parallelism int32, labels map[string]string, owner *metav1.OwnerReference) *batchv1.Job {
	t.Helper()
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: name, Labels: labels},
		Spec: batchv1.JobSpec{
			CompletionMode: ptr.To(batchv1.IndexedCompletion),
			Parallelism:    ptr.To(parallelism),
			Completions:    ptr.To(int32(8)),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{Name: "trainer", Image: "trainer:1"}}},
			},
		},
	}
	if owner != nil {
		job.OwnerReferences = []metav1.OwnerReference{*owner}
	}
	mustCreate(ctx, t, c, job)
	return job
}

// jobPod creates index i of job on node, as the Job controller would.
func jobPod(ctx context.Context, t *testing.T, c client.Client, job *batchv1.Job, i int, node string) *corev1.Pod {
	t.Helper()
	labels := map[string]string{"batch.kubernetes.io/job-completion-index": fmt.Sprint(i)}
	for k, v := range job.Spec.Template.Labels {
		labels[k] = v
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: job.Namespace, Name: fmt.Sprintf("%s-%d-x%d", job.Name, i, i), Labels: labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(job, batchv1.SchemeGroupVersion.WithKind("Job"))}},
		Spec: *job.Spec.Template.Spec.DeepCopy(),
	}
	p.Spec.NodeName = node
	mustCreate(ctx, t, c, p)
	return p
}

func mustPod(ctx context.Context, t *testing.T, c client.Client, name, node string, labels, annotations map[string]string) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: name, Labels: labels, Annotations: annotations},
		Spec: corev1.PodSpec{NodeName: node, RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "main", Image: "main:1"}}},
	}
	mustCreate(ctx, t, c, p)
	return p
}

func names(pods []*corev1.Pod) []types.NamespacedName {
	out := make([]types.NamespacedName, len(pods))
	for i, p := range pods {
		out[i] = types.NamespacedName{Namespace: p.Namespace, Name: p.Name}
	}
	return out
}
