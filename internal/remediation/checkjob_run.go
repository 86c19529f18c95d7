package remediation

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/validation"
)

// maxCheckOutput bounds what is read of a check pod's log. The tools'
// verdicts sit at the end of their output (nccl-tests' average, DCGM's
// closing JSON brace) and a full nccl-tests or DCGM level 4 run prints
// well under this.
const maxCheckOutput = 1 << 20

// maxLogWait bounds reading a check pod's log.
const maxLogWait = 20 * time.Second

// podLogReader reads a container's log: the typed clientset's pods/log,
// which controller-runtime's client does not offer.
type podLogReader interface {
	podLog(ctx context.Context, namespace, pod, container string) ([]byte, error)
}

// clientsetLogs reads pods/log through a typed clientset.
type clientsetLogs struct{ cs kubernetes.Interface }

func (l clientsetLogs) podLog(ctx context.Context, namespace, pod, container string) ([]byte, error) {
	// The API server proxies the log from the node's kubelet, which may
	// not answer (the node under test is suspect): the termination message
	// is the fallback, so a reconcile does not wait long for it.
	ctx, cancel := context.WithTimeout(ctx, maxLogWait)
	defer cancel()
	limit := int64(maxCheckOutput)
	rc, err := l.cs.CoreV1().Pods(namespace).GetLogs(pod, &corev1.PodLogOptions{Container: container, LimitBytes: &limit}).Stream(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rc.Close() }()
	return io.ReadAll(io.LimitReader(rc, maxCheckOutput))
}

// jobCheck is one step of a Job check: judged (outcome set), or waiting.
type jobCheck struct {
	outcome v1alpha1.CheckOutcome
	value   string
	floor   string
	message string
	excerpt string
	// wait says what the check waits for, while outcome is empty.
	wait string
	// disrupted: the Job failed because its pod was preempted or deleted,
	// not because of the node: an idle check then counts as not run.
	disrupted bool
	// misconfigured: configuration kept the check from running
	// (misconfiguredPrefix).
	misconfigured bool
}

// checkJobOwner is who a check Job runs for: its purpose
// (LabelCheckPurpose) and, for a repair, the incident.
type checkJobOwner struct {
	purpose  string
	incident string
	// stillOpen re-reads the record past the cache just before the Job is
	// created: an error (a conflict) when the check was judged meanwhile,
	// so a stale view never runs a judged check again.
	stillOpen func(ctx context.Context) error
}

// disruptedPrefix starts the message of a check whose pod was preempted
// or deleted, notScheduledPrefix that of one whose pod never got onto the
// node: either way the check did not run to its end. misconfiguredPrefix
// starts that of a check the controller's or the policy's configuration
// kept from running (no image, no floor, no GPUs to request, no agent
// report, a Job the API server refuses): it says nothing of the node, so
// it holds the node for an operator instead of replacing it.
const (
	disruptedPrefix     = "the check's pod was preempted or deleted: "
	notScheduledPrefix  = "the check's pod was not scheduled"
	misconfiguredPrefix = "the check could not run because of configuration: "
)

// misconfigured reports whether the check could not run because of
// configuration (misconfiguredPrefix).
func misconfigured(res *v1alpha1.CheckResult) bool {
	return res.Outcome == v1alpha1.CheckError && strings.HasPrefix(res.Message, misconfiguredPrefix)
}

// gaveWay reports whether the check did not run because something else
// took the node's GPUs: its pod was preempted, deleted or never scheduled.
// An idle check that gave way says nothing of the node.
func gaveWay(res *v1alpha1.CheckResult) bool {
	return res.Outcome == v1alpha1.CheckError && (strings.HasPrefix(res.Message, disruptedPrefix) || strings.HasPrefix(res.Message, notScheduledPrefix))
}

// runJobCheck advances the Job check res of c on node: it creates the Job
// once, reads it back past the cache (the cache holds no Jobs: the
// controller may only read them in its check namespace, and a cluster-wide
// informer of every Job would cost memory for a handful of checks), and
// once it has finished reads and judges its output. The caller times the
// check out, saves the outcome and only then deletes the Job
// (dropCheckJob): a Job deleted before its verdict is saved would be
// created again and run again, its first verdict lost.
func (r *remediationReconciler) runJobCheck(ctx context.Context, node *corev1.Node, c v1alpha1.ValidationCheck, res *v1alpha1.CheckResult, owner checkJobOwner) (jobCheck, error) {
	floor, minGBps, ferr := checkFloor(c, node)
	if ferr != nil {
		return jobCheck{outcome: v1alpha1.CheckError, misconfigured: true, floor: "a floor for the node's GPU product", message: ferr.Error()}, nil
	}
	image, err := checkImage(c, r.checks.Images)
	if err != nil {
		return jobCheck{outcome: v1alpha1.CheckError, misconfigured: true, floor: floor, message: err.Error()}, nil
	}
	gpus := nodeGPUs(node)
	if gpus <= 0 {
		return jobCheck{outcome: v1alpha1.CheckError, misconfigured: true, floor: floor,
			message: fmt.Sprintf("node %s has no allocatable %s for the check to request: check its device plugin, or leave it out of the policy", node.Name, v1alpha1.ResourceNvidiaGPU)}, nil
	}
	ns, name, _ := strings.Cut(res.Job, "/")
	var job batchv1.Job
	err = r.reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &job)
	switch {
	case apierrors.IsNotFound(err):
		spec := checkJobSpec{Name: name, Namespace: ns, Node: node, Check: c, Purpose: owner.purpose,
			Incident: owner.incident, Image: image, Command: checkCommand(c, gpus), ManagedBy: r.checks.JobsManagedBy}
		if owner.purpose == v1alpha1.CheckPurposeIdle {
			spec.PriorityClass = v1alpha1.PriorityClassIdleCheck
		}
		job := checkJob(spec)
		if owner.stillOpen != nil {
			if err := owner.stillOpen(ctx); err != nil {
				return jobCheck{}, err
			}
		}
		switch err := r.client.Create(ctx, job); {
		case apierrors.IsForbidden(err) || apierrors.IsInvalid(err) || apierrors.IsNotFound(err):
			// Retrying does not help: the controller may not create Jobs
			// there (its Role), the namespace is missing, or the policy's
			// image or command make an invalid Job.
			return jobCheck{outcome: v1alpha1.CheckError, misconfigured: true, floor: floor,
				message: fmt.Sprintf("the API server refused check Job %s: %v", res.Job, err)}, nil
		case err != nil && !apierrors.IsAlreadyExists(err):
			return jobCheck{}, fmt.Errorf("creating check Job %s: %w", res.Job, err)
		}
		return jobCheck{wait: "Job " + res.Job + " created"}, nil
	case err != nil:
		return jobCheck{}, fmt.Errorf("reading check Job %s: %w", res.Job, err)
	}
	done, failed := jobFinished(&job)
	if !done {
		return jobCheck{wait: "Job " + res.Job + " running"}, nil
	}
	if failed != "" {
		gone, err := r.checkDisrupted(ctx, &job, node.Name)
		if err != nil {
			return jobCheck{}, err
		}
		if gone != "" {
			return jobCheck{outcome: v1alpha1.CheckError, floor: floor, disrupted: true, message: gone + " (the Job: " + failed + ")"}, nil
		}
	}
	out, src, err := r.checkOutput(ctx, &job, node.Name)
	if err != nil {
		return jobCheck{}, err
	}
	var v validation.Verdict
	switch {
	case len(out) == 0 && failed != "":
		v = validation.Verdict{Outcome: v1alpha1.CheckError, Floor: floor, Message: "the check's Job failed without output: " + failed}
	case len(out) == 0:
		v = validation.Verdict{Outcome: v1alpha1.CheckError, Floor: floor, Message: "the check's Job finished without output"}
	default:
		v = judgeOutput(c, out, minGBps)
		v.Message += " (output from the pod's " + src + ")"
	}
	return jobCheck{outcome: v.Outcome, value: v.Value, floor: v.Floor, message: v.Message, excerpt: v.Excerpt}, nil
}

// judgeOutput hands the output to its kind's parser.
func judgeOutput(c v1alpha1.ValidationCheck, out []byte, minGBps float64) validation.Verdict {
	switch c.Kind {
	case v1alpha1.CheckDCGM:
		return validation.JudgeDCGM(out, int(c.Level))
	case v1alpha1.CheckNCCL:
		return validation.JudgeNCCL(out, minGBps)
	default:
		return validation.JudgeNVBandwidth(out, minGBps)
	}
}

// jobFinished reports whether the Job ended, and why when it failed.
func jobFinished(j *batchv1.Job) (done bool, failed string) {
	for _, c := range j.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete, batchv1.JobSuccessCriteriaMet:
			return true, ""
		case batchv1.JobFailed, batchv1.JobFailureTarget:
			why := c.Reason
			if c.Message != "" {
				why += ": " + c.Message
			}
			return true, why
		}
	}
	return false, ""
}

// checkOutput is the output of the Job's last pod: its log, else its
// container's termination message (which the kubelet fills from the log's
// tail when the container failed, FallbackToLogsOnError).
func (r *remediationReconciler) checkOutput(ctx context.Context, j *batchv1.Job, node string) (out []byte, source string, err error) {
	pod, err := r.checkPod(ctx, j, node)
	if err != nil || pod == nil || pod.Spec.NodeName != node {
		return nil, "", err
	}
	if r.checks.Logs != nil {
		if b, err := r.checks.Logs.podLog(ctx, pod.Namespace, pod.Name, checkContainer); err == nil && len(b) > 0 {
			return b, "log", nil
		}
	}
	for _, s := range pod.Status.ContainerStatuses {
		if s.Name == checkContainer && s.State.Terminated != nil && s.State.Terminated.Message != "" {
			return []byte(s.State.Terminated.Message), "termination message", nil
		}
	}
	return nil, "", nil
}

// checkPod is the Job's most recent pod (backoffLimit 0: normally its only
// one) that is truly the Job's, on node or not yet bound.
func (r *remediationReconciler) checkPod(ctx context.Context, j *batchv1.Job, node string) (*corev1.Pod, error) {
	var pods corev1.PodList
	if err := r.reader.List(ctx, &pods, client.InNamespace(j.Namespace), client.MatchingLabels{labelJobName: j.Name}); err != nil {
		return nil, fmt.Errorf("listing the pods of check Job %s/%s: %w", j.Namespace, j.Name, err)
	}
	var last *corev1.Pod
	for i := range pods.Items {
		p := &pods.Items[i]
		if !jobsPod(p, j, node) {
			continue
		}
		if last == nil || last.CreationTimestamp.Before(&p.CreationTimestamp) {
			last = p
		}
	}
	return last, nil
}

// jobsPod reports whether p can speak for check Job j on node. The label
// alone proves nothing: the kubelet of the node under test may create a
// mirror pod with any labels and a forged passing termination message.
// The Job's own pods have it as their controller (the API server refuses
// a mirror pod any owner but its node) and run on node.
func jobsPod(p *corev1.Pod, j *batchv1.Job, node string) bool {
	if _, mirror := p.Annotations[corev1.MirrorPodAnnotationKey]; mirror {
		return false
	}
	return metav1.IsControlledBy(p, j) && (p.Spec.NodeName == "" || p.Spec.NodeName == node)
}

// checkDisrupted says why a failed Job's pod did not run to its end when
// something other than the check ended it: the scheduler preempted it for
// a workload (condition DisruptionTarget), or it was deleted. Empty when
// the pod ran to its end.
func (r *remediationReconciler) checkDisrupted(ctx context.Context, j *batchv1.Job, node string) (string, error) {
	for _, c := range j.Status.Conditions {
		if c.Type == batchv1.JobFailed && c.Reason == batchv1.JobReasonDeadlineExceeded {
			return "", nil // the Job controller deletes the pods of a Job out of time: a timeout, not a disruption
		}
	}
	pod, err := r.checkPod(ctx, j, node)
	if err != nil {
		return "", err
	}
	if pod == nil {
		return "the Job has no pod left", nil
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
			return fmt.Sprintf("pod %s: %s %s", pod.Name, c.Reason, c.Message), nil
		}
	}
	if pod.DeletionTimestamp != nil {
		return "pod " + pod.Name + " was deleted", nil
	}
	return "", nil
}

// checkScheduled reports whether any pod of the check's Job was bound to
// the node: a check that times out without one was never run.
func (r *remediationReconciler) checkScheduled(ctx context.Context, jobRef, node string) bool {
	ns, name, _ := strings.Cut(jobRef, "/")
	var job batchv1.Job
	if err := r.reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &job); err != nil {
		return true // unknown: say "timed out", the weaker claim
	}
	var pods corev1.PodList
	if err := r.reader.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{labelJobName: name}); err != nil {
		return true
	}
	for i := range pods.Items {
		if p := &pods.Items[i]; jobsPod(p, &job, node) && p.Spec.NodeName == node {
			return true
		}
	}
	return false
}

// dropCheckJob deletes a judged check's Job once its verdict is saved. A
// failure is only logged: the verdict is the record, and the Job's TTL
// removes it anyway.
func (r *remediationReconciler) dropCheckJob(ctx context.Context, ref string) {
	if ref == "" {
		return
	}
	if err := r.deleteCheckJobRef(ctx, ref); err != nil {
		log.FromContext(ctx).Error(err, "the check's verdict is saved; its Job goes at its TTL", "job", ref)
	}
}

// deleteCheckJob deletes a check Job and, in the background, its pods.
func (r *remediationReconciler) deleteCheckJob(ctx context.Context, j *batchv1.Job) error {
	bg := metav1.DeletePropagationBackground
	if err := r.client.Delete(ctx, j, &client.DeleteOptions{PropagationPolicy: &bg}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting check Job %s/%s: %w", j.Namespace, j.Name, err)
	}
	return nil
}

// deleteCheckJobRef deletes the check Job named "namespace/name", if any.
func (r *remediationReconciler) deleteCheckJobRef(ctx context.Context, ref string) error {
	ns, name, ok := strings.Cut(ref, "/")
	if !ok {
		return nil
	}
	return r.deleteCheckJob(ctx, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
}

// checkTimeout is the check's timeout (the CRD defaults it to 15m).
func checkTimeout(c v1alpha1.ValidationCheck) time.Duration {
	if c.Timeout == nil || c.Timeout.Duration <= 0 {
		return 15 * time.Minute
	}
	return c.Timeout.Duration
}
