package remediation

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/audit"
	"github.com/gpuheal/gpuheal/internal/provider/fake"
)

// The health gate on a fake clock. The test plays the agent (its report
// annotation) and the kubelet and Job controller (a finished pod whose
// termination message is a real capture of the tool, and the Job's status).

const h100 = "NVIDIA-H100-80GB-HBM3"

// gatePolicy is a policy whose repaired nodes must pass checks.
func (e *clockEnv) gatePolicy(checks ...v1alpha1.ValidationCheck) {
	e.policy("p", func(s *v1alpha1.RemediationPolicySpec) {
		s.Validation = &v1alpha1.ValidationSpec{Checks: checks}
	})
}

// gpuNode makes a node look like a GPU node the Job checks can run on.
func (e *clockEnv) gpuNode(name string) {
	e.t.Helper()
	e.editNode(name, func(n *corev1.Node) { n.Labels[v1alpha1.LabelNvidiaGPUProduct] = h100 })
	n, _ := e.node(name)
	n.Status.Allocatable = corev1.ResourceList{corev1.ResourceName(v1alpha1.ResourceNvidiaGPU): resource.MustParse("8")}
	if err := e.c.Status().Update(e.ctx, n); err != nil {
		e.t.Fatal(err)
	}
}

// rebootIntoValidating takes node through a reboot that heals it, to the
// start of its checks.
func (e *clockEnv) rebootIntoValidating(node string) v1alpha1.NodeRemediation {
	e.t.Helper()
	e.breakGPU(node, "reboot")
	e.step(2 * time.Minute)
	e.healGPU(node)
	e.step(time.Minute) // the recovery hold
	nr := e.only(node)
	if nr.Status.Phase != v1alpha1.PhaseValidating || nr.Status.Reason != v1alpha1.ReasonValidating {
		e.t.Fatalf("phase %s/%s (%s), want Validating after the healing reboot", nr.Status.Phase, nr.Status.Reason, nr.Status.Message)
	}
	e.assertHeld(node)
	return nr
}

// assertHeld fails unless node is out of service: cordoned and tainted
// TaintValidating.
func (e *clockEnv) assertHeld(node string) {
	e.t.Helper()
	n, _ := e.node(node)
	if !n.Spec.Unschedulable || !hasValidatingTaint(n) {
		e.t.Fatalf("node %s in service while it should be validated: unschedulable %v, taints %v", node, n.Spec.Unschedulable, n.Spec.Taints)
	}
}

// agentReport is the agent writing its report, made at made.
func (e *clockEnv) agentReport(node string, made time.Time, bootID string, failing ...string) {
	e.t.Helper()
	rep := v1alpha1.AgentChecks{Time: metav1.NewTime(made), BootID: bootID}
	for _, name := range v1alpha1.AgentCheckNames {
		c := v1alpha1.AgentCheck{Name: name, Passed: !slices.Contains(failing, name)}
		if !c.Passed {
			c.Value, c.Expected, c.Message = "7 GPUs", "8 GPUs", "GPU 3 is missing"
		}
		rep.Checks = append(rep.Checks, c)
	}
	b, _ := json.Marshal(rep)
	e.editNode(node, func(n *corev1.Node) {
		if n.Annotations == nil {
			n.Annotations = map[string]string{}
		}
		n.Annotations[v1alpha1.AnnotationAgentChecks] = string(b)
	})
}

// checkJobs lists the check Jobs of node.
func (e *clockEnv) checkJobs(node string) []batchv1.Job {
	e.t.Helper()
	var jobs batchv1.JobList
	if err := e.c.List(e.ctx, &jobs, client.MatchingLabels{v1alpha1.LabelCheckNode: node}); err != nil {
		e.t.Fatal(err)
	}
	return jobs.Items
}

// runCheckJob plays the kubelet and the Job controller for node's one
// check Job: a pod that ended with output as its termination message.
func (e *clockEnv) runCheckJob(node, output string, succeeded bool) batchv1.Job {
	e.t.Helper()
	jobs := e.checkJobs(node)
	if len(jobs) != 1 {
		e.t.Fatalf("%d check Jobs for %s, want 1", len(jobs), node)
	}
	job := jobs[0]
	finishCheckJob(e.ctx, e.t, e.c, &job, node, output, succeeded, e.clock.Now())
	return job
}

// finishCheckJob creates the Job's pod, ended with output, and marks the
// Job finished as the Job controller would (the conditions a managedBy
// Job needs as well).
func finishCheckJob(ctx context.Context, t *testing.T, c client.Client, job *batchv1.Job, node, output string, succeeded bool, now time.Time) {
	t.Helper()
	ts := metav1.NewTime(now)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: job.Namespace, Name: job.Name + "-x7k2p", Labels: job.Spec.Template.Labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(job, batchv1.SchemeGroupVersion.WithKind("Job"))}},
		Spec: *job.Spec.Template.Spec.DeepCopy(),
	}
	pod.Spec.NodeName = node
	if err := c.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	code, phase := int32(0), corev1.PodSucceeded
	if !succeeded {
		code, phase = 1, corev1.PodFailed
	}
	// With a pod IP, kwok's stages (integration tests) leave the status alone.
	status := corev1.PodStatus{Phase: phase, PodIP: "10.0.255.2", PodIPs: []corev1.PodIP{{IP: "10.0.255.2"}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: checkContainer, Image: pod.Spec.Containers[0].Image,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Message: output, StartedAt: ts, FinishedAt: ts}}}}}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			return err
		}
		pod.Status = status
		return c.Status().Update(ctx, pod)
	})
	if err != nil {
		t.Fatal(err)
	}
	job.Status.StartTime = &ts
	if succeeded {
		job.Status.Succeeded, job.Status.CompletionTime = 1, &ts
		job.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: ts, LastProbeTime: ts},
			{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: ts, LastProbeTime: ts},
		}
	} else {
		job.Status.Failed = 1
		job.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: batchv1.JobReasonBackoffLimitExceeded, Message: "Job has reached the specified backoff limit", LastTransitionTime: ts, LastProbeTime: ts},
			{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: batchv1.JobReasonBackoffLimitExceeded, Message: "Job has reached the specified backoff limit", LastTransitionTime: ts, LastProbeTime: ts},
		}
	}
	if err := c.Status().Update(ctx, job); err != nil {
		t.Fatal(err)
	}
}

// capture reads a real output the parsers are tested on.
func capture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "validation", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func agentCheck() v1alpha1.ValidationCheck {
	return v1alpha1.ValidationCheck{Name: "agent", Kind: v1alpha1.CheckAgent}
}

func dcgmCheck() v1alpha1.ValidationCheck {
	return v1alpha1.ValidationCheck{Name: "dcgm", Kind: v1alpha1.CheckDCGM, Level: 2}
}

func ncclCheck(minGBps int32) v1alpha1.ValidationCheck {
	return v1alpha1.ValidationCheck{Name: "nccl", Kind: v1alpha1.CheckNCCL,
		Floors: []v1alpha1.BandwidthFloor{{Product: "A100", MinGBps: 1}, {Product: "h100", MinGBps: minGBps}}}
}

// TestGateAgentCheckPassUncordons: the node is held, cordoned and tainted,
// until the agent's fresh report passes; then it is uncordoned, untainted
// and stamped validated-at, and the result is in the status, the Events
// and the audit log.
func TestGateAgentCheckPassUncordons(t *testing.T) {
	e := newClockEnv(t)
	e.gatePolicy(agentCheck())
	node := e.addNodes("gpu", 1)[0]
	e.rebootIntoValidating(node)
	e.step(10 * time.Second)
	e.assertHeld(node)
	e.agentReport(node, e.clock.Now(), "")
	e.settle()
	nr := e.only(node)
	if nr.Status.Phase != v1alpha1.PhaseSucceeded || nr.Status.Reason != v1alpha1.ReasonRecovered || !contains(nr.Status.Message, "agent") {
		t.Fatalf("phase %s/%s (%s), want Succeeded/Recovered naming the check", nr.Status.Phase, nr.Status.Reason, nr.Status.Message)
	}
	n, _ := e.node(node)
	if n.Spec.Unschedulable || hasTaint(n) || hasValidatingTaint(n) {
		t.Errorf("node not back in service: %+v", n.Spec)
	}
	if got := n.Annotations[v1alpha1.AnnotationValidatedAt]; got != e.clock.Now().UTC().Format(time.RFC3339) {
		t.Errorf("validated-at %q, want now", got)
	}
	if len(nr.Status.Validation) != 1 {
		t.Fatalf("results %+v, want one", nr.Status.Validation)
	}
	res := nr.Status.Validation[0]
	if res.Outcome != v1alpha1.CheckPassed || res.Node != node || res.Finished == nil || res.Value != "PASS (8 agent checks)" || res.Floor != "every agent check passes" {
		t.Errorf("result %+v", res)
	}
	if len(e.events.find(nr.Name, v1alpha1.EventReasonValidationPassed)) != 1 || len(e.events.find(node, v1alpha1.EventReasonValidationPassed)) != 1 {
		t.Errorf("want a %s Event on the incident and the node", v1alpha1.EventReasonValidationPassed)
	}
	var found bool
	for _, r := range e.audit.Records() {
		if r.Kind == audit.CheckFinished {
			found = r.Reason == string(v1alpha1.CheckPassed) && r.Duration == 10*time.Second && contains(r.Message, "agent")
		}
	}
	if !found {
		t.Errorf("no CheckFinished audit record of the passed check in %+v", e.audit.Records())
	}
}

// TestGateStaleAgentReportNeverPasses: a passing report from before the
// checks began, or from another boot, never lets the node back; without a
// fresh one the check ends as Error at its timeout and the node is replaced.
func TestGateStaleAgentReportNeverPasses(t *testing.T) {
	e := newClockEnv(t)
	e.gatePolicy(agentCheck())
	node := e.addNodes("gpu", 1)[0]
	e.agentReport(node, e.clock.Now(), "") // before the incident: passing, but old
	nr := e.rebootIntoValidating(node)
	n, _ := e.node(node)
	n.Status.NodeInfo.BootID = "boot-after"
	if err := e.c.Status().Update(e.ctx, n); err != nil {
		t.Fatal(err)
	}
	started := enteredAt(&nr, v1alpha1.PhaseValidating)
	e.agentReport(node, started.Add(-2*time.Second), "")
	e.step(time.Minute)
	e.assertHeld(node)
	e.agentReport(node, e.clock.Now(), "boot-before") // fresh, but of the boot before the reboot
	e.step(time.Minute)
	e.assertHeld(node)
	if nr := e.only(node); nr.Status.Phase != v1alpha1.PhaseValidating {
		t.Fatalf("phase %s (%s) on a stale report, want Validating", nr.Status.Phase, nr.Status.Message)
	}
	e.step(13 * time.Minute) // the check's default timeout of 15m runs out
	nr = e.only(node)
	if len(nr.Status.Validation) != 1 || nr.Status.Validation[0].Outcome != v1alpha1.CheckError || !contains(nr.Status.Validation[0].Message, "boot-before") {
		t.Fatalf("results %+v, want one Error naming the other boot", nr.Status.Validation)
	}
	if nr.Status.Action != v1alpha1.ActionReplace || !slices.Contains(phasesOf(nr), v1alpha1.PhaseReplacing) {
		t.Errorf("action %s, phases %v: want the node replaced", nr.Status.Action, phasesOf(nr))
	}
	e.assertHeld(node)
}

// TestGateDCGMJobCheck: the DCGM check runs as the contract's Job, pinned
// to the node with all its GPUs; a passing diag returns the node, a
// failing one has it replaced. Either way the Job is deleted.
func TestGateDCGMJobCheck(t *testing.T) {
	for _, tc := range []struct {
		name, output string
		want         v1alpha1.CheckOutcome
	}{
		{"pass", "dcgm-text-3.3.3-a100-pass.txt", v1alpha1.CheckPassed},
		{"fail", "dcgm-json-3x-handwritten-gpu3-memory-fail.json", v1alpha1.CheckFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newClockEnv(t)
			e.opts.Checks.JobsManagedBy = "gpuheal.io/simfleet"
			e.restart()
			e.gatePolicy(dcgmCheck())
			node := e.addNodes("gpu", 1)[0]
			e.gpuNode(node)
			nr := e.rebootIntoValidating(node)
			jobs := e.checkJobs(node)
			if len(jobs) != 1 {
				t.Fatalf("%d check Jobs, want 1", len(jobs))
			}
			assertCheckJob(t, jobs[0], node, nr.Name)
			e.step(30 * time.Second)
			e.runCheckJob(node, capture(t, tc.output), tc.want == v1alpha1.CheckPassed)
			e.settle()
			nr = e.only(node)
			res := nr.Status.Validation[0]
			if res.Outcome != tc.want || res.Job != jobs[0].Namespace+"/"+jobs[0].Name || res.Excerpt == "" {
				t.Fatalf("result %+v, want %s with its Job and an excerpt", res, tc.want)
			}
			if len(e.checkJobs(node)) != 0 {
				t.Error("the check Job was not deleted")
			}
			if tc.want == v1alpha1.CheckPassed {
				if nr.Status.Phase != v1alpha1.PhaseSucceeded {
					t.Errorf("phase %s (%s), want Succeeded", nr.Status.Phase, nr.Status.Message)
				}
				return
			}
			if !contains(res.Value, "GPU 3") || nr.Status.Action != v1alpha1.ActionReplace || len(e.prov.CallsTo(fake.MethodReplace)) != 1 {
				t.Errorf("value %q, action %s, replace calls %d: want GPU 3's failure and one replace", res.Value, nr.Status.Action, len(e.prov.CallsTo(fake.MethodReplace)))
			}
			e.assertHeld(node)
		})
	}
}

func assertCheckJob(t *testing.T, j batchv1.Job, node, incident string) {
	t.Helper()
	if !strings.HasPrefix(j.Name, "gpuheal-check-") || !strings.HasSuffix(j.Name, "-dcgm") || len(j.Name) > 63 {
		t.Errorf("Job name %q", j.Name)
	}
	wantLabels := map[string]string{v1alpha1.LabelCheck: "dcgm", v1alpha1.LabelCheckKind: "DCGM", v1alpha1.LabelCheckNode: node, v1alpha1.LabelCheckPurpose: v1alpha1.CheckPurposeRepair}
	for k, v := range wantLabels {
		if j.Labels[k] != v || j.Spec.Template.Labels[k] != v {
			t.Errorf("label %s = %q on the Job, %q on its pods; want %q", k, j.Labels[k], j.Spec.Template.Labels[k], v)
		}
	}
	ps := j.Spec.Template.Spec
	c := ps.Containers[0]
	gpus := c.Resources.Limits[corev1.ResourceName(v1alpha1.ResourceNvidiaGPU)]
	switch {
	case j.Annotations[v1alpha1.AnnotationCheckIncident] != incident:
		t.Errorf("incident annotation %q", j.Annotations[v1alpha1.AnnotationCheckIncident])
	case *j.Spec.BackoffLimit != 0 || *j.Spec.ActiveDeadlineSeconds != 900 || *j.Spec.TTLSecondsAfterFinished != 3600:
		t.Errorf("backoffLimit %d, deadline %d, ttl %d", *j.Spec.BackoffLimit, *j.Spec.ActiveDeadlineSeconds, *j.Spec.TTLSecondsAfterFinished)
	case j.Spec.ManagedBy == nil || *j.Spec.ManagedBy != "gpuheal.io/simfleet":
		t.Errorf("managedBy %v", j.Spec.ManagedBy)
	case ps.RestartPolicy != corev1.RestartPolicyNever || c.Name != "check" || c.TerminationMessagePolicy != corev1.TerminationMessageFallbackToLogsOnError:
		t.Errorf("pod spec %+v", ps)
	case c.Image != DefaultCheckImageDCGM || !slices.Equal(c.Command, []string{"sh", "-c", "nv-hostengine && exec dcgmi diag -r 2 -j"}):
		t.Errorf("image %s command %q", c.Image, c.Command)
	case ps.AutomountServiceAccountToken == nil || *ps.AutomountServiceAccountToken:
		t.Error("the check pod mounts a service account token")
	case j.Annotations[v1alpha1.AnnotationCheckNodeName] != node || j.Spec.Template.Annotations[v1alpha1.AnnotationCheckNodeName] != node:
		t.Errorf("node-name annotation %q on the Job, %q on its pods", j.Annotations[v1alpha1.AnnotationCheckNodeName], j.Spec.Template.Annotations[v1alpha1.AnnotationCheckNodeName])
	case gpus.Value() != 8:
		t.Errorf("GPU limit %s, want the node's 8", gpus.String())
	case ps.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchFields[0].Values[0] != node:
		t.Errorf("affinity %+v", ps.Affinity)
	}
	for _, key := range []string{corev1.TaintNodeUnschedulable, v1alpha1.TaintUnhealthy, v1alpha1.TaintValidating} {
		if !slices.ContainsFunc(ps.Tolerations, func(tl corev1.Toleration) bool {
			return tl.Key == key && tl.Operator == corev1.TolerationOpExists
		}) {
			t.Errorf("no toleration of %s in %+v", key, ps.Tolerations)
		}
	}
}

// TestGateNCCLBelowFloorReplacesThenFailsTheReplacement: after the reboot
// the bus bandwidth is below the H100 floor: the node is never uncordoned
// but replaced, and its replacement goes through the same checks; failing
// them too, the incident fails and the replacement stays cordoned and
// tainted.
func TestGateNCCLBelowFloorReplacesThenFailsTheReplacement(t *testing.T) {
	e := newClockEnv(t)
	e.gatePolicy(agentCheck(), ncclCheck(400))
	node := e.addNodes("gpu", 1)[0]
	e.gpuNode(node)
	e.rebootIntoValidating(node)
	e.agentReport(node, e.clock.Now(), "")
	e.settle()
	job := e.runCheckJob(node, capture(t, "nccl-allreduce-h100-16ranks.txt"), true)
	if c := job.Spec.Template.Spec.Containers[0]; c.Image != DefaultCheckImageNCCL || !slices.Equal(c.Command[len(c.Command)-2:], []string{"-g", "8"}) {
		t.Errorf("NCCL image %s command %q", c.Image, c.Command)
	}
	e.settle()
	nr := e.only(node)
	if len(nr.Status.Validation) != 2 || nr.Status.Validation[1].Outcome != v1alpha1.CheckFailed || nr.Status.Validation[1].Floor != "400 GB/s" {
		t.Fatalf("results %+v, want agent Passed then nccl Failed against 400 GB/s", nr.Status.Validation)
	}
	if nr.Status.Action != v1alpha1.ActionReplace || nr.Status.Attempts != 2 || len(e.prov.CallsTo(fake.MethodReplace)) != 1 {
		t.Fatalf("action %s attempts %d: want a replace", nr.Status.Action, nr.Status.Attempts)
	}
	var escalated bool
	for _, r := range e.audit.Records() {
		escalated = escalated || (r.Kind == audit.Escalated && r.Reason == v1alpha1.ReasonValidationFailed)
	}
	if !escalated {
		t.Error("no Escalated audit record with reason ValidationFailed")
	}
	e.assertHeld(node)
	for _, r := range e.audit.Records() {
		if r.Kind == audit.Uncordoned {
			t.Fatal("the node that failed its check was uncordoned")
		}
	}

	e.replaceMachine(node, "new")
	repl := "new-0000"
	e.gpuNode(repl)
	e.step(e.opts.Poll)
	nr = e.only(node)
	if nr.Status.Phase != v1alpha1.PhaseValidating || nr.Status.Replacement != repl {
		t.Fatalf("phase %s (%s), replacement %q: want the replacement validated", nr.Status.Phase, nr.Status.Message, nr.Status.Replacement)
	}
	n, _ := e.node(repl)
	if !hasValidatingTaint(n) {
		t.Fatalf("replacement not tainted %s while validated: %v", v1alpha1.TaintValidating, n.Spec.Taints)
	}
	e.agentReport(repl, e.clock.Now(), "", v1alpha1.AgentCheckGPUsPresent)
	e.settle()
	nr = e.only(node)
	if nr.Status.Phase != v1alpha1.PhaseFailed || nr.Status.Reason != v1alpha1.ReasonValidationFailed {
		t.Fatalf("phase %s/%s (%s), want Failed/ValidationFailed", nr.Status.Phase, nr.Status.Reason, nr.Status.Message)
	}
	last := nr.Status.Validation[len(nr.Status.Validation)-1]
	if last.Node != repl || last.Attempt != 2 || last.Outcome != v1alpha1.CheckFailed || !contains(last.Message, "GPU 3 is missing") {
		t.Errorf("last result %+v, want the replacement's agent check Failed", last)
	}
	e.assertHeld(repl)
}

// TestGateJobCheckTimesOut: a Job whose pod never runs ends as Error at the
// check's timeout, says it was not scheduled, and is deleted.
func TestGateJobCheckTimesOut(t *testing.T) {
	e := newClockEnv(t)
	c := dcgmCheck()
	c.Timeout = &metav1.Duration{Duration: 10 * time.Minute}
	e.gatePolicy(c)
	node := e.addNodes("gpu", 1)[0]
	e.gpuNode(node)
	e.rebootIntoValidating(node)
	e.step(10*time.Minute - time.Second)
	if nr := e.only(node); nr.Status.Validation[0].Outcome != "" {
		t.Fatalf("result %+v before the timeout", nr.Status.Validation[0])
	}
	e.step(time.Second)
	nr := e.only(node)
	res := nr.Status.Validation[0]
	if res.Outcome != v1alpha1.CheckError || !contains(res.Message, "not scheduled") {
		t.Errorf("result %+v, want Error: not scheduled", res)
	}
	if len(e.checkJobs(node)) != 0 {
		t.Error("the timed-out Job was not deleted")
	}
	e.assertHeld(node)
}

// TestGateRestartMidCheckResumes: a controller that restarts while a check
// Job runs finds the Job by its name and judges it; the Job is created
// once and a finished check is not run again.
func TestGateRestartMidCheckResumes(t *testing.T) {
	var e *clockEnv
	created := 0
	e = newClockEnv(t, interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		obj.SetCreationTimestamp(metav1.NewTime(e.clock.Now()))
		if _, ok := obj.(*batchv1.Job); ok {
			created++
		}
		return c.Create(ctx, obj, opts...)
	}})
	e.gatePolicy(agentCheck(), dcgmCheck())
	node := e.addNodes("gpu", 1)[0]
	e.gpuNode(node)
	e.rebootIntoValidating(node)
	e.agentReport(node, e.clock.Now(), "")
	e.step(e.opts.Poll)
	before := e.only(node).Status.Validation
	e.restart()
	e.step(time.Minute)
	e.restart()
	e.runCheckJob(node, capture(t, "dcgm-text-3.3.3-a100-pass.txt"), true)
	e.settle()
	nr := e.only(node)
	if nr.Status.Phase != v1alpha1.PhaseSucceeded || created != 1 {
		t.Fatalf("phase %s (%s), %d Jobs created; want Succeeded with one Job", nr.Status.Phase, nr.Status.Message, created)
	}
	if len(before) != 2 || len(nr.Status.Validation) != 2 || !nr.Status.Validation[0].Finished.Equal(before[0].Finished) ||
		!nr.Status.Validation[1].Started.Equal(&before[1].Started) {
		t.Errorf("results before the restarts %+v, after %+v: want the same checks, each run once", before, nr.Status.Validation)
	}
}

// TestGateCheckConfigurationErrors: a check that configuration kept from
// running (no floor for the node's product, no image for the kind, no
// GPUs to request, a Job the API server refuses) is an Error that says
// what to fix and holds the node for an operator: no replace, since any
// node would fail it the same way.
func TestGateCheckConfigurationErrors(t *testing.T) {
	forbidden := interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		if _, ok := obj.(*batchv1.Job); ok {
			return apierrors.NewForbidden(batchv1.Resource("jobs"), obj.GetName(), errors.New("RBAC: no create in namespace default"))
		}
		return c.Create(ctx, obj, opts...)
	}}
	for _, tc := range []struct {
		name   string
		check  v1alpha1.ValidationCheck
		noGPUs bool
		funcs  []interceptor.Funcs
		msg    string
	}{
		{name: "no floor for the product", check: v1alpha1.ValidationCheck{Name: "nccl", Kind: v1alpha1.CheckNCCL, Floors: []v1alpha1.BandwidthFloor{{Product: "B200", MinGBps: 1}}},
			msg: "no floor of check nccl matches GPU product " + h100},
		{name: "no image", check: v1alpha1.ValidationCheck{Name: "nvb", Kind: v1alpha1.CheckNVBandwidth, Floors: []v1alpha1.BandwidthFloor{{Product: "*", MinGBps: 1}}},
			msg: "--check-image-nvbandwidth"},
		{name: "no GPUs", check: dcgmCheck(), noGPUs: true, msg: "no allocatable nvidia.com/gpu"},
		{name: "Job forbidden", check: dcgmCheck(), funcs: []interceptor.Funcs{forbidden}, msg: "RBAC: no create"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newClockEnv(t, tc.funcs...)
			e.gatePolicy(tc.check)
			node := e.addNodes("gpu", 1)[0]
			if !tc.noGPUs {
				e.gpuNode(node)
			}
			e.breakGPU(node, "reboot")
			e.step(2 * time.Minute)
			e.healGPU(node)
			e.step(time.Minute)
			nr := e.only(node)
			if len(nr.Status.Validation) != 1 || nr.Status.Validation[0].Outcome != v1alpha1.CheckError ||
				!strings.HasPrefix(nr.Status.Validation[0].Message, misconfiguredPrefix) || !contains(nr.Status.Validation[0].Message, tc.msg) {
				t.Fatalf("results %+v, want Error of configuration saying %q", nr.Status.Validation, tc.msg)
			}
			if nr.Status.Phase != v1alpha1.PhaseFailed || nr.Status.Reason != v1alpha1.ReasonValidationFailed || !contains(nr.Status.Message, "operator fixes the configuration") {
				t.Errorf("phase %s/%s (%s), want Failed/ValidationFailed holding the node", nr.Status.Phase, nr.Status.Reason, nr.Status.Message)
			}
			if len(e.checkJobs(node)) != 0 || nr.Status.Action == v1alpha1.ActionReplace || len(e.prov.CallsTo(fake.MethodReplace)) != 0 {
				t.Errorf("a Job ran or the node was replaced (action %s)", nr.Status.Action)
			}
			if evs := e.events.find(node, v1alpha1.EventReasonRemediationPrefix+string(v1alpha1.PhaseFailed)); len(evs) != 1 || !contains(evs[0].note, tc.msg) {
				t.Errorf("Events %+v on the node, want one saying %q", evs, tc.msg)
			}
			e.step(time.Hour)
			e.assertHeld(node)
		})
	}
}
