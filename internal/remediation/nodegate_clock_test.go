package remediation

import (
	"fmt"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/audit"
	"github.com/gpuheal/gpuheal/internal/nodemark"
)

// Join and idle checks on a fake clock; the test plays the agent (the
// join taint, its report), the kubelet and the Job controller.

// joinPolicy gates joining nodes (and idle ones every idle, when set).
func (e *clockEnv) joinPolicy(onJoin bool, idle time.Duration, checks ...v1alpha1.ValidationCheck) {
	e.policy("p", func(s *v1alpha1.RemediationPolicySpec) {
		s.Validation = &v1alpha1.ValidationSpec{Checks: checks, OnJoin: onJoin}
		if idle > 0 {
			s.Validation.IdleInterval = &metav1.Duration{Duration: idle}
		}
	})
}

// joinTaint is the agent's first write to a node never validated.
func (e *clockEnv) joinTaint(node string) {
	e.t.Helper()
	e.editNode(node, func(n *corev1.Node) {
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: v1alpha1.TaintValidating, Effect: corev1.TaintEffectNoSchedule})
	})
}

// run is the node's check run record, failing without one.
func (e *clockEnv) run(node string) *gateRun {
	e.t.Helper()
	n, _ := e.node(node)
	run, err := nodeRun(n)
	if err != nil || run == nil {
		e.t.Fatalf("node %s: run record %v, %v", node, run, err)
	}
	return run
}

// assertInService fails unless node takes work and gpuheal marked nothing on it.
func (e *clockEnv) assertInService(node string) {
	e.t.Helper()
	n, _ := e.node(node)
	if n.Spec.Unschedulable || hasTaint(n) || hasValidatingTaint(n) || len(e.incidents(node)) != 0 {
		e.t.Fatalf("node %s out of service: unschedulable %v, taints %v, %d incidents", node, n.Spec.Unschedulable, n.Spec.Taints, len(e.incidents(node)))
	}
}

// TestJoinGatePassUntaints: a joining node waits for its agent's report,
// passes it and a DCGM Job (found again by name after a restart), and is
// untainted and stamped validated-at, never cordoned, with Events and
// audit records as the repair gate leaves.
func TestJoinGatePassUntaints(t *testing.T) {
	e := newClockEnv(t)
	e.joinPolicy(true, 0, agentCheck(), dcgmCheck())
	node := e.addNodes("gpu", 1)[0]
	e.gpuNode(node)
	e.joinTaint(node)
	e.settle()
	run := e.run(node)
	if run.Purpose != v1alpha1.CheckPurposeJoin || run.Attempt != 1 || !run.running() || len(run.Checks) != 1 {
		t.Fatalf("run %+v, want join attempt 1 waiting on the agent check", run)
	}
	n, _ := e.node(node)
	if n.Spec.Unschedulable || !hasValidatingTaint(n) {
		t.Fatalf("joining node: unschedulable %v, taints %v; want tainted only", n.Spec.Unschedulable, n.Spec.Taints)
	}
	e.step(time.Minute) // the agent has not reported yet: the check waits
	if len(e.checkJobs(node)) != 0 || e.run(node).Checks[0].Outcome != "" {
		t.Fatal("the run went on without the agent's report")
	}
	e.agentReport(node, e.clock.Now(), "")
	e.settle()
	jobs := e.checkJobs(node)
	if len(jobs) != 1 {
		t.Fatalf("%d check Jobs, want the DCGM one", len(jobs))
	}
	j := jobs[0]
	n, _ = e.node(node)
	if j.Name != checkJobName(nodeOwner(n), 1, "dcgm") || j.Labels[v1alpha1.LabelCheckPurpose] != v1alpha1.CheckPurposeJoin ||
		j.Annotations[v1alpha1.AnnotationCheckIncident] != "" || j.Spec.Template.Spec.PriorityClassName != "" {
		t.Errorf("Job %s labels %v annotations %v priority %q: want the node's deterministic name, purpose join, no incident",
			j.Name, j.Labels, j.Annotations, j.Spec.Template.Spec.PriorityClassName)
	}
	e.restart() // a new controller finds the Job by its name
	e.step(30 * time.Second)
	if jobs := e.checkJobs(node); len(jobs) != 1 || jobs[0].Name != j.Name {
		t.Fatalf("after a restart: %d Jobs, want %s again", len(jobs), j.Name)
	}
	e.runCheckJob(node, capture(t, "dcgm-text-3.3.3-a100-pass.txt"), true)
	e.settle()
	e.assertInService(node)
	n, _ = e.node(node)
	if n.Annotations[v1alpha1.AnnotationValidatedAt] != e.clock.Now().UTC().Format(time.RFC3339) {
		t.Errorf("validated-at %q, want now", n.Annotations[v1alpha1.AnnotationValidatedAt])
	}
	run = e.run(node)
	if run.Outcome != string(v1alpha1.CheckPassed) || len(run.Checks) != 2 || run.Checks[1].Outcome != v1alpha1.CheckPassed || len(run.Checks[1].Excerpt) > maxRunExcerpt {
		t.Errorf("run %+v, want Passed with both results", run)
	}
	if len(e.checkJobs(node)) != 0 {
		t.Error("the check Job was not deleted")
	}
	if got := e.events.find(node, v1alpha1.EventReasonValidationPassed); len(got) != 3 { // two checks and the run
		t.Errorf("%d ValidationPassed Events on the node, want 3: %v", len(got), got)
	}
	if recs := e.audit.Records(); countKind(recs, audit.CheckFinished) != 2 || countKind(recs, audit.Succeeded) != 1 {
		t.Errorf("audit: %d CheckFinished, %d Succeeded; want 2 and 1", countKind(recs, audit.CheckFinished), countKind(recs, audit.Succeeded))
	}
	e.step(time.Hour) // no idle interval: nothing more runs
	if e.run(node).Attempt != 1 || len(e.checkJobs(node)) != 0 {
		t.Error("a validated node was checked again without an idle interval")
	}
}

func countKind(recs []audit.Record, k audit.Kind) int {
	n := 0
	for _, r := range recs {
		if r.Kind == k {
			n++
		}
	}
	return n
}

// TestJoinGateFailureRetriedAfterBackoff: a joining node whose check fails
// keeps its taint, is told of in a ValidationFailed Event and the audit
// log, and is checked again only after the backoff.
func TestJoinGateFailureRetriedAfterBackoff(t *testing.T) {
	e := newClockEnv(t)
	e.joinPolicy(true, 0, agentCheck())
	node := e.addNodes("gpu", 1)[0]
	e.joinTaint(node)
	e.agentReport(node, e.clock.Now(), "", v1alpha1.AgentCheckGPUsPresent)
	e.settle()
	run := e.run(node)
	if run.Outcome != string(v1alpha1.CheckFailed) || run.running() {
		t.Fatalf("run %+v, want Failed", run)
	}
	n, _ := e.node(node)
	if !hasValidatingTaint(n) || n.Annotations[v1alpha1.AnnotationValidatedAt] != "" || n.Spec.Unschedulable {
		t.Fatalf("failed joining node: taints %v, validated-at %q, unschedulable %v; want tainted, not validated, not cordoned",
			n.Spec.Taints, n.Annotations[v1alpha1.AnnotationValidatedAt], n.Spec.Unschedulable)
	}
	if got := e.events.find(node, v1alpha1.EventReasonValidationFailed); len(got) != 2 || !contains(got[1].note, "checked again in 10m0s") {
		t.Errorf("ValidationFailed Events %v, want the check's and the run's naming the retry", got)
	}
	if countKind(e.audit.Records(), audit.Failed) != 1 {
		t.Error("no audit record of the failed run")
	}
	e.agentReport(node, e.clock.Now().Add(time.Second), "") // fixed, but the backoff holds
	e.step(joinRetryBackoff - time.Second)
	if e.run(node).Attempt != 1 {
		t.Fatalf("checked again within the backoff: attempt %d", e.run(node).Attempt)
	}
	e.step(time.Second)
	run = e.run(node)
	if run.Attempt != 2 || !run.running() {
		t.Fatalf("run %+v, want attempt 2 under way after the backoff", run)
	}
	e.agentReport(node, e.clock.Now(), "")
	e.settle()
	e.assertInService(node)
	if e.run(node).Outcome != string(v1alpha1.CheckPassed) {
		t.Errorf("run %+v, want Passed", e.run(node))
	}
}

// gpuPod runs a workload that requests GPUs on node.
func (e *clockEnv) gpuPod(name, node string) {
	e.t.Helper()
	e.create(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "main", Image: "trainer:latest",
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceName(v1alpha1.ResourceNvidiaGPU): resource.MustParse("8")}}}}},
	})
}

// TestIdleCheckOnlyWithoutGPUWork: of two nodes due, the one running a
// GPU workload is left alone; the other runs the check at the idle
// priority, untainted and uncordoned, and is stamped validated-at on a
// pass; it is not checked again within the interval.
func TestIdleCheckOnlyWithoutGPUWork(t *testing.T) {
	e := newClockEnv(t)
	e.joinPolicy(false, time.Hour, dcgmCheck())
	nodes := e.addNodes("gpu", 2)
	busy, idle := nodes[0], nodes[1]
	for _, n := range nodes {
		e.gpuNode(n)
	}
	e.gpuPod("trainer", busy)
	e.runPod("default", "web", idle, nil) // no GPUs: the node is idle
	e.settle()
	if jobs := e.checkJobs(busy); len(jobs) != 0 {
		t.Fatalf("%d check Jobs on the node with GPU work, want none", len(jobs))
	}
	jobs := e.checkJobs(idle)
	if len(jobs) != 1 {
		t.Fatalf("%d check Jobs on the idle node, want 1", len(jobs))
	}
	if j := jobs[0]; j.Spec.Template.Spec.PriorityClassName != v1alpha1.PriorityClassIdleCheck || j.Labels[v1alpha1.LabelCheckPurpose] != v1alpha1.CheckPurposeIdle {
		t.Errorf("Job priority %q purpose %q, want %s and idle", j.Spec.Template.Spec.PriorityClassName, j.Labels[v1alpha1.LabelCheckPurpose], v1alpha1.PriorityClassIdleCheck)
	}
	e.assertInService(idle)
	e.step(time.Minute)
	e.runCheckJob(idle, capture(t, "dcgm-json-4x-handwritten-pass.json"), true)
	e.settle()
	e.assertInService(idle)
	n, _ := e.node(idle)
	if n.Annotations[v1alpha1.AnnotationValidatedAt] == "" || e.run(idle).Outcome != string(v1alpha1.CheckPassed) {
		t.Fatalf("validated-at %q, run %+v: want stamped and Passed", n.Annotations[v1alpha1.AnnotationValidatedAt], e.run(idle))
	}
	e.step(59 * time.Minute)
	if len(e.checkJobs(idle)) != 0 || len(e.checkJobs(busy)) != 0 {
		t.Fatal("a check ran again within the interval, or on the busy node")
	}
	e.step(2 * time.Minute)
	if len(e.checkJobs(idle)) != 1 || e.run(idle).Attempt != 2 {
		t.Fatalf("%d Jobs, attempt %d: want the next idle check an interval after the pass", len(e.checkJobs(idle)), e.run(idle).Attempt)
	}
	if len(e.checkJobs(busy)) != 0 {
		t.Error("the busy node got a check")
	}
}

// TestIdleCheckPreemptedIsSkipped: a workload preempting the idle check's
// pod is no failure: the run is skipped, the node stays in service and is
// tried again an interval later.
func TestIdleCheckPreemptedIsSkipped(t *testing.T) {
	e := newClockEnv(t)
	e.joinPolicy(true, time.Hour, dcgmCheck())
	node := e.addNodes("gpu", 1)[0]
	e.gpuNode(node)
	e.settle()
	j := e.runCheckJob(node, "", false)
	var pod corev1.Pod
	if err := e.c.Get(e.ctx, client.ObjectKey{Namespace: j.Namespace, Name: j.Name + "-x7k2p"}, &pod); err != nil {
		t.Fatal(err)
	}
	pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
		Reason: "PreemptionByScheduler", Message: "default-scheduler: preempting to accommodate a higher priority pod"})
	if err := e.c.Status().Update(e.ctx, &pod); err != nil {
		t.Fatal(err)
	}
	e.settle()
	run := e.run(node)
	if run.Outcome != runSkipped || !contains(run.Checks[0].Message, "PreemptionByScheduler") {
		t.Fatalf("run %+v, want Skipped naming the preemption", run)
	}
	e.assertInService(node)
	n, _ := e.node(node)
	if n.Annotations[v1alpha1.AnnotationValidatedAt] != "" {
		t.Error("a skipped check validated the node")
	}
	if got := e.events.find(node, v1alpha1.EventReasonValidationFailed); len(got) != 0 {
		t.Errorf("ValidationFailed Events %v for a preempted check", got)
	}
	if got := e.events.find(node, v1alpha1.EventReasonValidationSkipped); len(got) != 2 {
		t.Errorf("%d ValidationSkipped Events, want the check's and the run's", len(got))
	}
	e.step(59 * time.Minute)
	if len(e.checkJobs(node)) != 0 {
		t.Fatal("retried within the interval")
	}
	e.step(2 * time.Minute)
	if e.run(node).Attempt != 2 || len(e.checkJobs(node)) != 1 {
		t.Fatalf("attempt %d with %d Jobs, want the next try an interval later", e.run(node).Attempt, len(e.checkJobs(node)))
	}
}

// TestIdleCheckFailureTaints: a node in service that fails its idle check
// is tainted and no longer validated; without onJoin it waits for an
// operator (no more runs), and a release lifts the taint.
func TestIdleCheckFailureTaints(t *testing.T) {
	e := newClockEnv(t)
	e.joinPolicy(false, time.Hour, dcgmCheck())
	node := e.addNodes("gpu", 1)[0]
	e.gpuNode(node)
	e.editNode(node, func(n *corev1.Node) {
		n.Annotations = map[string]string{v1alpha1.AnnotationValidatedAt: e.clock.Now().Add(-2 * time.Hour).UTC().Format(time.RFC3339)}
	})
	e.settle()
	e.runCheckJob(node, capture(t, "dcgm-json-3x-handwritten-gpu3-memory-fail.json"), false)
	e.settle()
	n, _ := e.node(node)
	run := e.run(node)
	if !hasValidatingTaint(n) || n.Annotations[v1alpha1.AnnotationValidatedAt] != "" || run.Outcome != string(v1alpha1.CheckFailed) {
		t.Fatalf("taints %v, validated-at %q, run %+v: want tainted, not validated, Failed", n.Spec.Taints, n.Annotations[v1alpha1.AnnotationValidatedAt], run)
	}
	if n.Spec.Unschedulable {
		t.Error("the idle check cordoned the node")
	}
	if got := e.events.find(node, v1alpha1.EventReasonValidationFailed); len(got) != 2 || !contains(got[1].note, "GPU 3") {
		t.Errorf("ValidationFailed Events %v, want the check's and the run's", got)
	}
	e.step(3 * time.Hour)
	if e.run(node).Attempt != 1 || len(e.checkJobs(node)) != 0 {
		t.Error("a node that failed its idle check ran again without onJoin")
	}
	e.editNode(node, func(n *corev1.Node) {
		if !nodemark.Release(n) {
			t.Error("release changed nothing")
		}
	})
	e.settle()
	e.assertInService(node)
}

// TestIdleChecksBounded: at most 5% of the policy's nodes (at least one)
// run idle checks at once.
func TestIdleChecksBounded(t *testing.T) {
	e := newClockEnv(t)
	e.joinPolicy(false, time.Hour, dcgmCheck())
	nodes := e.addNodes("gpu", 40)
	for _, n := range nodes {
		e.gpuNode(n)
	}
	e.settle()
	var jobs batchv1.JobList
	if err := e.c.List(e.ctx, &jobs); err != nil {
		t.Fatal(err)
	}
	if len(jobs.Items) != 2 {
		t.Fatalf("%d idle checks at once on 40 nodes, want 2 (5%%)", len(jobs.Items))
	}
	for i := range jobs.Items {
		finishCheckJob(e.ctx, t, e.c, &jobs.Items[i], jobs.Items[i].Labels[v1alpha1.LabelCheckNode], capture(t, "dcgm-json-4x-handwritten-pass.json"), true, e.clock.Now())
	}
	e.step(time.Minute)
	if err := e.c.List(e.ctx, &jobs); err != nil {
		t.Fatal(err)
	}
	if len(jobs.Items) != 2 {
		t.Fatalf("%d idle checks after the first two passed, want the next 2", len(jobs.Items))
	}
	validated := 0
	for _, name := range nodes {
		if n, _ := e.node(name); n.Annotations[v1alpha1.AnnotationValidatedAt] != "" {
			validated++
		}
	}
	if validated != 2 {
		t.Errorf("%d nodes validated, want 2", validated)
	}
}

// TestJoinRunAbandonedForAnIncident: an incident opening on a node mid-run
// ends the run (its Job deleted): the incident owns the node.
func TestJoinRunAbandonedForAnIncident(t *testing.T) {
	e := newClockEnv(t)
	e.joinPolicy(true, 0, dcgmCheck())
	node := e.addNodes("gpu", 1)[0]
	e.gpuNode(node)
	e.joinTaint(node)
	e.settle()
	if len(e.checkJobs(node)) != 1 {
		t.Fatal("no join check Job")
	}
	e.breakGPU(node, "reboot")
	e.step(2 * time.Minute)
	if len(e.incidents(node)) != 1 {
		t.Fatalf("%d incidents, want 1", len(e.incidents(node)))
	}
	run := e.run(node)
	if run.Outcome != runSkipped || !contains(run.Message, "incident") {
		t.Fatalf("run %+v, want Skipped for the incident", run)
	}
	for _, j := range e.checkJobs(node) {
		if j.Labels[v1alpha1.LabelCheckPurpose] == v1alpha1.CheckPurposeJoin {
			t.Errorf("join Job %s left behind", j.Name)
		}
	}
}

// FuzzParseGateRun: no record can panic the reader, and one it accepts
// says what a run must.
func FuzzParseGateRun(f *testing.F) {
	ok := (&gateRun{Purpose: "join", Policy: "p", Attempt: 1, Started: metav1.NewTime(t0),
		Checks: []v1alpha1.CheckResult{{Name: "dcgm", Kind: v1alpha1.CheckDCGM, Node: "n", Started: metav1.NewTime(t0)}}}).encode()
	for _, s := range []string{ok, "", "{}", `{"purpose":"idle","attempt":1,"started":"2026-12-01T12:00:00Z","outcome":"Passed"}`, ok + "x", `{"purpose":"join","attempt":0}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		g, err := parseGateRun(raw)
		if err != nil {
			if g != nil || err.Error() == "" {
				t.Fatalf("error %v with record %+v", err, g)
			}
			return
		}
		if g.Attempt < 1 || g.Started.IsZero() || (g.Purpose != "join" && g.Purpose != "idle") || len(g.Checks) > 16 {
			t.Fatalf("accepted %+v", g)
		}
		if _, err := parseGateRun(g.encode()); err != nil {
			t.Fatalf("its own encoding of %q does not parse: %v", raw, err)
		}
	})
}

// TestParseGateRunErrors: a bad record is refused with a message naming
// what is wrong.
func TestParseGateRunErrors(t *testing.T) {
	for raw, want := range map[string]string{
		`{"purpose":"repair","attempt":1,"started":"2026-12-01T12:00:00Z"}`:                                            "purpose",
		`{"purpose":"join","attempt":0,"started":"2026-12-01T12:00:00Z"}`:                                              "attempt 0",
		`{"purpose":"join","attempt":1}`:                                                                               "no start",
		`{"purpose":"join","attempt":1,"started":"2026-12-01T12:00:00Z","outcome":"Passed"}`:                           "not ended",
		`{"purpose":"join","attempt":1,"started":"2026-12-01T12:00:00Z","x":1}`:                                        "unknown field",
		`{"purpose":"join","attempt":1,"started":"2026-12-01T12:00:00Z"} {}`:                                           "data after",
		`{"purpose":"join","attempt":1,"started":"2026-12-01T12:00:00Z","checks":[{},{}]}`:                             "no name",
		fmt.Sprintf(`{"purpose":"join","attempt":1,"started":"2026-12-01T12:00:00Z","message":"%0*d"}`, maxGateRun, 0): "more than",
	} {
		if _, err := parseGateRun(raw); err == nil || !contains(err.Error(), want) || !contains(err.Error(), v1alpha1.AnnotationGateRun) {
			t.Errorf("%.80s: error %v, want one naming the annotation and %q", raw, err, want)
		}
	}
}

// TestIdleCheckNotScheduledIsSkipped: an idle check whose pod never got
// onto the node (a workload took the GPUs first) times out as skipped, not
// as a failure of the node.
func TestIdleCheckNotScheduledIsSkipped(t *testing.T) {
	e := newClockEnv(t)
	c := dcgmCheck()
	c.Timeout = &metav1.Duration{Duration: time.Minute}
	e.joinPolicy(false, time.Hour, c)
	node := e.addNodes("gpu", 1)[0]
	e.gpuNode(node)
	e.settle()
	if len(e.checkJobs(node)) != 1 {
		t.Fatal("no idle check Job")
	}
	e.step(time.Minute)
	if run := e.run(node); run.Outcome != runSkipped || !contains(run.Checks[0].Message, "not scheduled") {
		t.Fatalf("run %+v, want Skipped: the pod was never scheduled", run)
	}
	e.assertInService(node)
	if len(e.checkJobs(node)) != 0 {
		t.Error("the unscheduled check's Job was left behind")
	}
}

// TestIdleCheckFailureRechecksWithOnJoin: with onJoin, a node that failed
// its idle check is checked again like a joining node after the backoff,
// and a pass hands it back to service.
func TestIdleCheckFailureRechecksWithOnJoin(t *testing.T) {
	e := newClockEnv(t)
	e.joinPolicy(true, time.Hour, agentCheck())
	node := e.addNodes("gpu", 1)[0]
	e.agentReport(node, e.clock.Now(), "", v1alpha1.AgentCheckNVLinksUp)
	e.settle()
	n, _ := e.node(node)
	if run := e.run(node); run.Purpose != v1alpha1.CheckPurposeIdle || run.Outcome != string(v1alpha1.CheckFailed) || !hasValidatingTaint(n) {
		t.Fatalf("run %+v, taints %v: want a failed idle run and the taint", run, n.Spec.Taints)
	}
	e.agentReport(node, e.clock.Now().Add(time.Second), "")
	e.step(joinRetryBackoff - time.Second)
	if e.run(node).Attempt != 1 {
		t.Fatal("checked again within the backoff")
	}
	e.step(time.Second)
	e.agentReport(node, e.clock.Now(), "")
	e.settle()
	if run := e.run(node); run.Purpose != v1alpha1.CheckPurposeJoin || run.Attempt != 2 || run.Outcome != string(v1alpha1.CheckPassed) {
		t.Fatalf("run %+v, want join attempt 2 Passed", run)
	}
	e.assertInService(node)
}

// TestIdleCheckOutOfTimeIsNoSkip: a Job the Job controller failed for its
// deadline (it deletes the pod) timed out on the node: an Error, which
// takes the node out of service, not a check that gave way.
func TestIdleCheckOutOfTimeIsNoSkip(t *testing.T) {
	e := newClockEnv(t)
	e.joinPolicy(false, time.Hour, dcgmCheck())
	node := e.addNodes("gpu", 1)[0]
	e.gpuNode(node)
	e.settle()
	job := e.checkJobs(node)[0]
	ts := metav1.NewTime(e.clock.Now())
	job.Status.StartTime, job.Status.Failed = &ts, 1
	job.Status.Conditions = []batchv1.JobCondition{
		{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: batchv1.JobReasonDeadlineExceeded, LastTransitionTime: ts, LastProbeTime: ts},
		{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: batchv1.JobReasonDeadlineExceeded, LastTransitionTime: ts, LastProbeTime: ts},
	}
	if err := e.c.Status().Update(e.ctx, &job); err != nil {
		t.Fatal(err)
	}
	e.settle()
	n, _ := e.node(node)
	if run := e.run(node); run.Outcome != string(v1alpha1.CheckError) || !hasValidatingTaint(n) {
		t.Fatalf("run %+v, taints %v: want Error and the taint", run, n.Spec.Taints)
	}
}
