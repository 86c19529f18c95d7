//go:build integration

package remediation

import (
	"context"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
)

// TestJoinAndIdleChecksOnAPIServer: on a real API server, a node that
// joins tainted passes its DCGM Job check and is untainted and validated;
// an idle node gets the check at the idle priority (the chart's
// PriorityClass), and a workload preempting it leaves the node in service,
// unvalidated, the run skipped. The test plays the agent (the join taint),
// the scheduler (the preemption) and, for Jobs of another manager, the Job
// controller and the kubelet.
func TestJoinAndIdleChecksOnAPIServer(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "joinidle", 2)
	joining, idle := h.nodes[0], h.nodes[1]
	never := corev1.PreemptNever
	h.create(&schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.PriorityClassIdleCheck}, Value: -1000000, PreemptionPolicy: &never})
	h.patchNode(joining, func(n *corev1.Node) {
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: v1alpha1.TaintValidating, Effect: corev1.TaintEffectNoSchedule})
	})
	pol := fastPolicy("joinidle")
	pol.Spec.Validation = &v1alpha1.ValidationSpec{OnJoin: true, IdleInterval: &metav1.Duration{Duration: 10 * time.Minute},
		Checks: []v1alpha1.ValidationCheck{{Name: "dcgm", Kind: v1alpha1.CheckDCGM, Level: 2, Timeout: &metav1.Duration{Duration: time.Minute}}}}
	h.create(pol)
	h.startController(controllerConfig{checks: CheckOptions{Namespace: "default", JobsManagedBy: "gpuheal.io/test", Logs: noKubeletLogs{}}})

	join := h.checkJob(joining, v1alpha1.CheckPurposeJoin)
	idleJob := h.checkJob(idle, v1alpha1.CheckPurposeIdle)
	if p := idleJob.Spec.Template.Spec.PriorityClassName; p != v1alpha1.PriorityClassIdleCheck {
		t.Errorf("idle check priority class %q, want %s", p, v1alpha1.PriorityClassIdleCheck)
	}
	finishCheckJobOnAPIServer(t, h, &join, joining, capture(t, "dcgm-text-3.3.3-a100-pass.txt"), true)
	h.waitFor(joining+" untainted and validated", 30*time.Second, func() (bool, error) {
		n, _ := h.node(joining)
		return n != nil && !hasValidatingTaint(n) && n.Annotations[v1alpha1.AnnotationValidatedAt] != "" && !n.Spec.Unschedulable, nil
	})

	h.preemptCheckJob(&idleJob, idle)
	h.waitFor("the idle run of "+idle+" skipped", 30*time.Second, func() (bool, error) {
		n, _ := h.node(idle)
		run, err := nodeRun(n)
		return run != nil && run.Outcome == runSkipped, err
	})
	n, _ := h.node(idle)
	if hasValidatingTaint(n) || n.Spec.Unschedulable || n.Annotations[v1alpha1.AnnotationValidatedAt] != "" {
		t.Errorf("%s after a preempted idle check: taints %v, unschedulable %v, validated-at %q; want in service, unvalidated",
			idle, n.Spec.Taints, n.Spec.Unschedulable, n.Annotations[v1alpha1.AnnotationValidatedAt])
	}
	if len(h.incidents(idle)) != 0 || len(h.incidents(joining)) != 0 {
		t.Error("a join or idle check opened an incident")
	}
}

// checkJob waits for node's one check Job of purpose.
func (h *harness) checkJob(node, purpose string) batchv1.Job {
	h.t.Helper()
	var job batchv1.Job
	h.waitFor("the "+purpose+" check Job of "+node, 30*time.Second, func() (bool, error) {
		var jobs batchv1.JobList
		err := h.c.List(context.Background(), &jobs, client.MatchingLabels{v1alpha1.LabelCheckNode: node, v1alpha1.LabelCheckPurpose: purpose})
		if len(jobs.Items) == 1 {
			job = jobs.Items[0]
		}
		return len(jobs.Items) == 1, err
	})
	return job
}

// patchNode edits a node as the agent or an operator would.
func (h *harness) patchNode(name string, edit func(*corev1.Node)) {
	h.t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var n corev1.Node
		if err := h.c.Get(context.Background(), client.ObjectKey{Name: name}, &n); err != nil {
			return err
		}
		edit(&n)
		return h.c.Update(context.Background(), &n)
	})
	if err != nil {
		h.t.Fatal(err)
	}
}

// preemptCheckJob is the scheduler preempting the check's pod for a
// workload (DisruptionTarget, then the pod fails) and the Job controller
// failing the Job.
func (h *harness) preemptCheckJob(job *batchv1.Job, node string) {
	h.t.Helper()
	ctx := context.Background()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: job.Namespace, Name: job.Name + "-p9q4z", Labels: job.Spec.Template.Labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(job, batchv1.SchemeGroupVersion.WithKind("Job"))}},
		Spec: *job.Spec.Template.Spec.DeepCopy(),
	}
	pod.Spec.NodeName = node
	h.create(pod)
	now := metav1.Now()
	pod.Status = corev1.PodStatus{Phase: corev1.PodFailed, PodIP: "10.0.255.3", PodIPs: []corev1.PodIP{{IP: "10.0.255.3"}},
		Conditions: []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, LastTransitionTime: now,
			Reason: "PreemptionByScheduler", Message: "default-scheduler: preempting to accommodate a higher priority pod"}}}
	if err := h.c.Status().Update(ctx, pod); err != nil {
		h.t.Fatal(err)
	}
	if err := h.c.Get(ctx, client.ObjectKeyFromObject(job), job); err != nil {
		h.t.Fatal(err)
	}
	job.Status.StartTime, job.Status.Failed = &now, 1
	job.Status.Conditions = []batchv1.JobCondition{
		{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: batchv1.JobReasonBackoffLimitExceeded, Message: "Job has reached the specified backoff limit", LastTransitionTime: now, LastProbeTime: now},
		{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: batchv1.JobReasonBackoffLimitExceeded, Message: "Job has reached the specified backoff limit", LastTransitionTime: now, LastProbeTime: now},
	}
	if err := h.c.Status().Update(ctx, job); err != nil {
		h.t.Fatal(err)
	}
}
