//go:build integration

package simfleet

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/agent/kubecore"
	"github.com/gpuheal/gpuheal/internal/simfleet/schedule"
	"github.com/gpuheal/gpuheal/internal/testenv"
	"github.com/gpuheal/gpuheal/internal/testenv/testcluster"
	"github.com/gpuheal/gpuheal/internal/testproc"
	"github.com/gpuheal/gpuheal/internal/validation"
)

// The sim fleet answers check Jobs made as the wire contract says, on kwok
// nodes: the Job gets a finished pod whose termination message is the
// simulated tool's output. A latent NCCL fault fails JudgeNCCL while its
// node's passive condition stays healthy; a healthy node passes; a latent
// DCGM memory fault fails its DCGM Job (Failed, with the conditions API
// validation requires); a check past its deadline fails DeadlineExceeded;
// a latent fault under a workload surfaces and turns the node's condition
// False, and stays so across a fleet restart. After a reboot the latent
// fault is still there.
func TestSimFleetAnswersCheckJobs(t *testing.T) {
	env := testcluster.Start(t, testenv.Options{Kwok: true})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	names, err := testenv.CreateGPUNodes(ctx, env.Client, "gate", 4)
	if err != nil {
		t.Fatal(err)
	}
	sick, healthy, memory, busy := names[0], names[1], names[2], names[3]
	kube, err := kubecore.NewClient(env.Kubeconfig, 50)
	if err != nil {
		t.Fatal(err)
	}
	o, tmpl := simFleetTestOptions(env.Kubeconfig)
	o.AnswerChecks, o.CheckPoll, o.CheckSpeed = true, 200*time.Millisecond, 1
	// Longer than kwok takes to start a pod and, without the fleet's
	// annotations, to complete a Job's pod (three stages of 1–6 s): a pod
	// kwok ended first would have no termination message.
	o.CheckDurations = map[v1alpha1.CheckKind]time.Duration{v1alpha1.CheckNCCL: 20 * time.Second, v1alpha1.CheckDCGM: 20 * time.Second, v1alpha1.CheckNVBandwidth: 20 * time.Second}
	o.LatentSurfaceAfter = 5 * time.Second
	f := newSimFleet(o, tmpl, kube, t.TempDir(), slog.New(slog.DiscardHandler))
	runFleet := func(f *simFleet) (stop func()) {
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); f.run(runCtx) }()
		return func() { cancel(); <-done }
	}
	stopFleet := runFleet(f)
	defer func() { stopFleet() }()
	for _, n := range names {
		testproc.EventuallyTrue(t, time.Minute, "agent of "+n, func() bool { return f.agentOf(n) != nil })
	}
	plant := func(node, class string, gpu int) {
		c, ok := schedule.ClassNamed(class)
		if !ok {
			t.Fatalf("no class %s", class)
		}
		f.mu.Lock()
		f.injectLocked(f.agents[node], c, gpu, schedule.Injection{Index: -1, Slot: node, Class: class})
		f.mu.Unlock()
	}
	plant(sick, "latent-nccl-bandwidth", 2)
	plant(memory, "latent-dcgm-memory", 5)
	plant(busy, "latent-dcgm-diagnostic", 1)
	// A workload on the busy node: after 5 s of it the latent fault
	// surfaces (Xid 79) and the agent's condition turns False. Check
	// pods are no workload: the other nodes' faults stay latent.
	workload := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "training", Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: busy, Containers: []corev1.Container{{
			Name: "train", Image: "example.com/train:1",
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{testenv.GPUResource: resource.MustParse("8")}},
		}}},
	}
	if err := env.Client.Create(ctx, workload); err != nil {
		t.Fatal(err)
	}

	jobs := map[string]*batchv1.Job{
		"nccl-sick":    checkJobFor(sick, "nccl", v1alpha1.CheckNCCL, []string{"all_reduce_perf", "-b", "512M", "-e", "8G", "-f", "2", "-g", "8"}),
		"nccl-healthy": checkJobFor(healthy, "nccl", v1alpha1.CheckNCCL, []string{"all_reduce_perf", "-b", "512M", "-e", "8G", "-f", "2", "-g", "8"}),
		"dcgm-healthy": checkJobFor(healthy, "dcgm", v1alpha1.CheckDCGM, []string{"dcgmi", "diag", "-r", "2", "-j"}),
		"dcgm-memory":  checkJobFor(memory, "dcgm", v1alpha1.CheckDCGM, []string{"dcgmi", "diag", "-r", "2", "-j"}),
		"nvb-sick":     checkJobFor(sick, "nvb", v1alpha1.CheckNVBandwidth, []string{"nvbandwidth", "-t", "device_to_device_memcpy_read_ce"}),
		"deadline":     checkJobFor(healthy, "dcgm-short", v1alpha1.CheckDCGM, []string{"dcgmi", "diag", "-r", "4", "-j"}),
	}
	short := int64(3)
	jobs["deadline"].Spec.ActiveDeadlineSeconds = &short
	for _, j := range jobs {
		if err := env.Client.Create(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	out := map[string][]byte{}
	for what, j := range jobs {
		finished := waitJobFinished(ctx, t, env.Client, j)
		want := batchv1.JobComplete
		if what == "dcgm-memory" || what == "deadline" {
			want = batchv1.JobFailed
		}
		if !jobCondition(finished, want) {
			t.Errorf("%s: Job conditions %+v, want %s", what, finished.Status.Conditions, want)
		}
		if what == "deadline" {
			if c := finished.Status.Conditions; len(c) == 0 || c[len(c)-1].Reason != "DeadlineExceeded" {
				t.Errorf("a check past its deadline ended with %+v", c)
			}
			continue
		}
		out[what] = checkOutput(ctx, t, env.Client, finished)
	}
	if v := validation.JudgeNCCL(out["nccl-sick"], 350); v.Outcome != v1alpha1.CheckFailed {
		t.Errorf("NCCL on the node with a latent fault: %s %s (%s)\n%s", v.Outcome, v.Value, v.Message, out["nccl-sick"])
	}
	if v := validation.JudgeNCCL(out["nccl-healthy"], 350); v.Outcome != v1alpha1.CheckPassed {
		t.Errorf("NCCL on the healthy node: %s %s (%s)\n%s", v.Outcome, v.Value, v.Message, out["nccl-healthy"])
	}
	if v := validation.JudgeDCGM(out["dcgm-healthy"], 2); v.Outcome != v1alpha1.CheckPassed {
		t.Errorf("DCGM level 2 on the healthy node: %s %s (%s)", v.Outcome, v.Value, v.Message)
	}
	if v := validation.JudgeDCGM(out["dcgm-memory"], 2); v.Outcome != v1alpha1.CheckFailed || v.Value != "FAIL: memory on GPU 5" {
		t.Errorf("DCGM level 2 on a latent memory fault: %s %s (%s)", v.Outcome, v.Value, v.Message)
	}
	if v := validation.JudgeNVBandwidth(out["nvb-sick"], 330); v.Outcome != v1alpha1.CheckFailed {
		t.Errorf("nvbandwidth on the node with a latent fault: %s %s (%s)", v.Outcome, v.Value, v.Message)
	}
	waitGPUCondition(ctx, t, env.Client, sick, corev1.ConditionTrue) // passive signals stay green
	waitGPUCondition(ctx, t, env.Client, busy, corev1.ConditionFalse)
	// A restarted fleet finds the surfaced fault still there in this boot.
	testproc.EventuallyTrue(t, time.Minute, "the surfaced fault on disk", func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return len(f.agents[busy].hardware.Surfaced) == 1
	})
	// ... and journaled it as a fatal fault of its own, once.
	injections, err := schedule.ReadInjections(f.dir)
	if err != nil {
		t.Fatal(err)
	}
	var surfaced []schedule.Injection
	for _, in := range injections {
		if in.Class == schedule.ClassSurfaced {
			surfaced = append(surfaced, in)
		}
	}
	if len(surfaced) != 1 || surfaced[0].Node != busy || surfaced[0].GPU != 1 || !surfaced[0].Fatal || surfaced[0].Index != schedule.IndexSurfaced {
		t.Errorf("journaled surfacings %+v, want one fatal on %s GPU 1", surfaced, busy)
	}
	stopFleet()
	f = newSimFleet(o, tmpl, kube, f.dir, slog.New(slog.DiscardHandler))
	stopFleet = runFleet(f)
	testproc.EventuallyTrue(t, time.Minute, "agents back", func() bool { return f.agentOf(busy) != nil && f.agentOf(sick) != nil })
	if snap, err := f.agentOf(busy).node.Snapshot(ctx); err != nil || !snap.GPUs[1].Missing {
		t.Fatalf("after a fleet restart the surfaced fault of %s is gone (%v)", busy, err)
	}

	// A reboot: the board keeps its latent fault.
	setLabel(ctx, t, env.Client, sick, v1alpha1.LabelKwokBooting, "true")
	first := f.agentOf(sick)
	testproc.EventuallyTrue(t, time.Minute, "agent of the rebooting node stopped", func() bool { return f.agentOf(sick) == nil })
	var n corev1.Node
	if err := env.Client.Get(ctx, client.ObjectKey{Name: sick}, &n); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(n.DeepCopy())
	n.Annotations[v1alpha1.AnnotationKwokRebootToken] = "incident-1"
	delete(n.Labels, v1alpha1.LabelKwokBooting)
	if err := env.Client.Patch(ctx, &n, patch); err != nil {
		t.Fatal(err)
	}
	testproc.EventuallyTrue(t, time.Minute, "agent of the booted node started", func() bool { a := f.agentOf(sick); return a != nil && a != first })
	if v := validation.JudgeNCCL(f.agentOf(sick).node.NCCLAllReduce().Output, 350); v.Outcome != v1alpha1.CheckFailed {
		t.Errorf("after a reboot the latent fault is gone: NCCL %s %s", v.Outcome, v.Value)
	}
}

// checkJobFor is a check Job as the controller makes it (the wire
// contract in docs/health-gate.md).
func checkJobFor(node, check string, kind v1alpha1.CheckKind, command []string) *batchv1.Job {
	sum := sha256.Sum256([]byte(node + "/1/" + check))
	labels := map[string]string{
		v1alpha1.LabelCheck: check, v1alpha1.LabelCheckKind: string(kind),
		v1alpha1.LabelCheckNode: node, v1alpha1.LabelCheckPurpose: v1alpha1.CheckPurposeRepair,
	}
	zero, deadline, ttl := int32(0), int64(600), int32(3600)
	exists := corev1.TolerationOpExists
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name: "gpuheal-check-" + hex.EncodeToString(sum[:])[:10] + "-" + check, Namespace: "default",
			Labels: labels, Annotations: map[string]string{v1alpha1.AnnotationCheckIncident: "incident-" + node},
		},
		Spec: batchv1.JobSpec{
			BackoffLimit: &zero, ActiveDeadlineSeconds: &deadline, TTLSecondsAfterFinished: &ttl,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{
						Name: "check", Image: "example.com/" + check + ":1", Command: command,
						Resources:                corev1.ResourceRequirements{Limits: corev1.ResourceList{testenv.GPUResource: resource.MustParse("8")}},
						TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
					}},
					Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
						RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
							MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
						}}},
					}},
					Tolerations: []corev1.Toleration{
						{Key: "node.kubernetes.io/unschedulable", Operator: exists, Effect: corev1.TaintEffectNoSchedule},
						{Key: "gpuheal.io/unhealthy", Operator: exists},
						{Key: v1alpha1.TaintValidating, Operator: exists},
					},
				},
			},
		},
	}
}

func jobCondition(j *batchv1.Job, typ batchv1.JobConditionType) bool {
	for _, c := range j.Status.Conditions {
		if c.Type == typ && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func waitJobFinished(ctx context.Context, t *testing.T, c client.Client, j *batchv1.Job) *batchv1.Job {
	t.Helper()
	var got batchv1.Job
	testproc.EventuallyTrue(t, time.Minute, "Job "+j.Name+" on "+j.Labels[v1alpha1.LabelCheckNode]+" finished", func() bool {
		return c.Get(ctx, client.ObjectKeyFromObject(j), &got) == nil &&
			(jobCondition(&got, batchv1.JobComplete) || jobCondition(&got, batchv1.JobFailed))
	})
	if got.Status.StartTime == nil || (jobCondition(&got, batchv1.JobComplete) && !jobCondition(&got, batchv1.JobSuccessCriteriaMet)) {
		t.Errorf("Job %s: status %+v lacks what the Job controller writes", got.Name, got.Status)
	}
	return &got
}

// checkOutput reads the output as the controller does when the pod's log
// cannot be had: the check container's termination message.
func checkOutput(ctx context.Context, t *testing.T, c client.Client, j *batchv1.Job) []byte {
	t.Helper()
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(j.Namespace), client.MatchingLabels{"batch.kubernetes.io/job-name": j.Name}); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 1 {
		t.Fatalf("Job %s has %d pods, want 1", j.Name, len(pods.Items))
	}
	p := pods.Items[0]
	if p.Spec.NodeName != j.Labels[v1alpha1.LabelCheckNode] || (p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed) {
		t.Fatalf("pod %s: node %q, phase %s", p.Name, p.Spec.NodeName, p.Status.Phase)
	}
	for _, s := range p.Status.ContainerStatuses {
		if s.Name == "check" && s.State.Terminated != nil && s.State.Terminated.Message != "" {
			return []byte(s.State.Terminated.Message)
		}
	}
	t.Fatalf("pod %s: no termination message on container check: %+v", p.Name, p.Status.ContainerStatuses)
	return nil
}
