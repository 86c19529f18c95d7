package remediation

import (
	"context"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/audit"
)

// fakePoster records the checkpoint requests the controller POSTs.
type fakePoster struct {
	mu    sync.Mutex
	posts []posted
}

type posted struct {
	url string
	req CheckpointRequest
}

func (f *fakePoster) Post(_ context.Context, u *url.URL, req CheckpointRequest) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.posts = append(f.posts, posted{u.String(), req})
}

func (f *fakePoster) all() []posted {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]posted(nil), f.posts...)
}

// modeEnv is a clockEnv whose policy drains namespace "train" under one
// drain mode, with a recording checkpoint poster.
type modeEnv struct {
	*clockEnv
	poster *fakePoster
	node   string
}

// the severities an incident's fault can have, as the tests open them.
const (
	openWarning = "warning" // a predicted failure (CordonOnly, opted in)
	openFatal   = "fatal"   // Xid 48, a double-bit error: fatal, the GPU still there
	openGone    = "gone"    // Xid 79: the GPU fell off the bus
)

func newModeEnv(t *testing.T, w v1alpha1.WorkloadDrain, funcs ...interceptor.Funcs) *modeEnv {
	t.Helper()
	return newModeEnvWith(t, w, nil, funcs...)
}

// newModeEnvWith is newModeEnv with edit applied to the policy too.
func newModeEnvWith(t *testing.T, w v1alpha1.WorkloadDrain, edit func(*v1alpha1.RemediationPolicySpec), funcs ...interceptor.Funcs) *modeEnv {
	t.Helper()
	e := &modeEnv{clockEnv: newClockEnv(t, funcs...), poster: &fakePoster{}}
	e.opts.CheckpointPoster = e.poster
	e.restart()
	e.policy("p", func(s *v1alpha1.RemediationPolicySpec) {
		s.UnhealthyConditions = []v1alpha1.UnhealthyCondition{
			{Type: gpuCondition, Status: metav1.ConditionFalse, For: metav1.Duration{Duration: 2 * time.Minute}},
			{Type: v1alpha1.ConditionGPUFailurePredicted, Status: metav1.ConditionTrue, For: metav1.Duration{Duration: 2 * time.Minute}},
		}
		s.Actions = []v1alpha1.ActionRule{{ConditionType: v1alpha1.ConditionGPUFailurePredicted, Action: v1alpha1.ActionCordonOnly}}
		s.Drain.Workloads = []v1alpha1.WorkloadDrain{w}
		if edit != nil {
			edit(s)
		}
	})
	e.node = e.addNodes("gpu", 1)[0]
	return e
}

// open makes the node's fault of severity sev and steps until it drains;
// it returns when the drain started.
func (e *modeEnv) open(sev string) time.Time {
	e.t.Helper()
	switch sev {
	case openWarning:
		e.setCondition(e.node, v1alpha1.ConditionGPUFailurePredicted, corev1.ConditionTrue, v1alpha1.ReasonGPUFailurePredicted, predictedMessage)
	case openFatal:
		e.editNode(e.node, func(n *corev1.Node) {
			n.Annotations = map[string]string{v1alpha1.AnnotationRecommendedActions: adviceAnnotation("reboot")}
		})
		e.setCondition(e.node, gpuCondition, corev1.ConditionFalse, "NvidiaXID48Error", xidMessage)
	case openGone:
		e.breakGPU(e.node, "reboot")
	}
	e.step(2 * time.Minute)
	start := enteredAt(new(e.only(e.node)), v1alpha1.PhaseDraining)
	if start.IsZero() {
		e.t.Fatalf("no drain started: %+v", e.only(e.node).Status.Phases)
	}
	return start
}

// trainer runs train/trainer-0 on the node, with the pod IP 10.1.2.3.
func (e *modeEnv) trainer(annotations map[string]string) {
	e.t.Helper()
	e.create(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "train", Name: "trainer-0", Labels: map[string]string{"app": "trainer"}, Annotations: annotations},
		Spec:       corev1.PodSpec{NodeName: e.node, Containers: []corev1.Container{{Name: "main", Image: "trainer:latest"}}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.1.2.3"},
	})
}

func (e *modeEnv) pod(ns, name string) (*corev1.Pod, bool) {
	e.t.Helper()
	var p corev1.Pod
	err := e.c.Get(e.ctx, client.ObjectKey{Namespace: ns, Name: name}, &p)
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return &p, true
}

func (e *modeEnv) wait(pod string) v1alpha1.WorkloadWait {
	e.t.Helper()
	nr := e.only(e.node)
	w := findWait(&nr, pod)
	if w == nil {
		e.t.Fatalf("no wait for %s in %+v", pod, nr.Status.WorkloadWaits)
	}
	return *w
}

func (e *modeEnv) auditOf(kind audit.Kind) []audit.Record {
	e.t.Helper()
	var out []audit.Record
	for _, r := range e.audit.Records() {
		if r.Kind == kind {
			out = append(out, r)
		}
	}
	return out
}

// finishPod is the kubelet seeing the pod's containers exit 0.
func (e *modeEnv) finishPod(ns, name string) {
	e.t.Helper()
	p, ok := e.pod(ns, name)
	if !ok {
		e.t.Fatalf("pod %s/%s not found", ns, name)
	}
	p.Status.Phase = corev1.PodSucceeded
	if err := e.c.Status().Update(e.ctx, p); err != nil {
		e.t.Fatal(err)
	}
}

func dur(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }

var trainNS = []string{"train"}

// TestDrainModeWaitsAreBoundedBySeverity: each waiting mode, configured
// for 30m, waits 30m for a warning (a predicted failure), 5m for a fatal
// fault, and not at all for a GPU that is gone; then the pod goes
// (DeleteAfterTimeout: deleted past a PDB that refuses it).
func TestDrainModeWaitsAreBoundedBySeverity(t *testing.T) {
	modes := []v1alpha1.WorkloadDrain{
		{Namespaces: trainNS, Mode: v1alpha1.DrainAllowCompletion, MaxWait: dur(30 * time.Minute)},
		{Namespaces: trainNS, Mode: v1alpha1.DrainCheckpointThenEvict, Grace: dur(30 * time.Minute)},
		{Namespaces: trainNS, Mode: v1alpha1.DrainDeleteAfterTimeout, Timeout: dur(30 * time.Minute)},
	}
	for _, w := range modes {
		for _, tc := range []struct {
			sev  string
			wait time.Duration
		}{{openWarning, 30 * time.Minute}, {openFatal, FatalWaitBound}, {openGone, 0}} {
			t.Run(string(w.Mode)+"/"+tc.sev, func(t *testing.T) {
				var funcs []interceptor.Funcs
				if w.Mode == v1alpha1.DrainDeleteAfterTimeout && tc.sev != openGone {
					funcs = append(funcs, pdbRefuses("train/trainer-0"))
				}
				e := newModeEnv(t, w, funcs...)
				e.trainer(nil)
				e.runPod("default", "web-0", e.node, nil) // no entry matches: Immediate
				start := e.open(tc.sev)
				if _, ok := e.pod("default", "web-0"); ok {
					t.Error("the pod no entry matches was not evicted at once")
				}
				if tc.wait == 0 {
					if _, ok := e.pod("train", "trainer-0"); ok {
						t.Fatal("trainer-0 still there: a gone GPU waits for nothing")
					}
					nr := e.only(e.node)
					if m := nr.Status.Phases[2]; m.Phase != v1alpha1.PhaseDraining || !strings.Contains(m.Message, "the GPU is gone (NvidiaXID79Error): drain modes are not honoured") {
						t.Errorf("Draining message %q, want it to say the GPU is gone and no mode was honoured", m.Message)
					}
					if recs := e.auditOf(audit.Evicted); len(recs) != 2 || !strings.Contains(recs[0].Message+recs[1].Message, "not honoured") {
						t.Errorf("Evicted records %+v, want trainer-0's saying its mode was not honoured", recs)
					}
					if len(nr.Status.WorkloadWaits) != 0 || len(e.poster.all()) != 0 {
						t.Errorf("waits %+v, posts %v: want none", nr.Status.WorkloadWaits, e.poster.all())
					}
					return
				}
				if got := e.wait("train/trainer-0").Deadline.Sub(start); got != tc.wait {
					t.Errorf("deadline %v after the drain's start, want %v", got, tc.wait)
				}
				e.clock.SetTime(start.Add(tc.wait))
				e.settle()
				if _, ok := e.pod("train", "trainer-0"); !ok {
					t.Fatalf("trainer-0 gone by its deadline %v, want it kept until then", tc.wait)
				}
				if nr := e.only(e.node); nr.Status.Phase != v1alpha1.PhaseDraining {
					t.Fatalf("phase %s while waiting, want Draining", nr.Status.Phase)
				}
				e.step(e.opts.Poll)
				if _, ok := e.pod("train", "trainer-0"); ok {
					t.Fatalf("trainer-0 still there past its deadline %v (%+v)", tc.wait, e.only(e.node).Status)
				}
				want := v1alpha1.WaitTimedOut
				if w.Mode == v1alpha1.DrainDeleteAfterTimeout {
					want = v1alpha1.WaitDeleted
				}
				if got := e.wait("train/trainer-0").Outcome; got != want {
					t.Errorf("outcome %q, want %q", got, want)
				}
				if recs := e.auditOf(audit.WorkloadWaited); len(recs) != 1 || recs[0].Reason != want || recs[0].Pod != "train/trainer-0" {
					t.Errorf("WorkloadWaited records %+v, want one %s", recs, want)
				}
			})
		}
	}
}

// TestAllowCompletionEndsWhenThePodFinishes: the drain waits while the
// pod runs (DrainBlocked says why), and ends as soon as it finishes.
func TestAllowCompletionEndsWhenThePodFinishes(t *testing.T) {
	e := newModeEnv(t, v1alpha1.WorkloadDrain{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "trainer"}},
		Mode: v1alpha1.DrainAllowCompletion, MaxWait: dur(4 * time.Hour)})
	e.trainer(nil)
	e.open(openWarning)
	e.step(time.Hour)
	nr := e.only(e.node)
	c := meta.FindStatusCondition(nr.Status.Conditions, v1alpha1.ConditionDrainBlocked)
	if c == nil || c.Reason != v1alpha1.ReasonWorkloadWait || !strings.Contains(c.Message, "train/trainer-0 (AllowCompletion until") {
		t.Fatalf("DrainBlocked %+v, want WorkloadWait naming the pod", c)
	}
	e.finishPod("train", "trainer-0")
	e.step(e.opts.Poll)
	nr = e.only(e.node)
	if nr.Status.Phase != v1alpha1.PhaseSucceeded || nr.Status.Action != v1alpha1.ActionCordonOnly {
		t.Fatalf("phase %s, want the CordonOnly incident done once the pod finished", nr.Status.Phase)
	}
	if w := e.wait("train/trainer-0"); w.Outcome != v1alpha1.WaitExited {
		t.Errorf("outcome %q, want Exited", w.Outcome)
	}
	if len(nr.Status.EvictedPods) != 0 {
		t.Errorf("evicted %v, want nothing: the pod finished", nr.Status.EvictedPods)
	}
}

// TestDrainTimeoutCountsFromTheLastWait: a pod a PDB holds is not
// force-deleted at the drain timeout while another pod's wait runs: the
// timeout counts from the end of the last wait. The Drained message says
// how the waits ended.
func TestDrainTimeoutCountsFromTheLastWait(t *testing.T) {
	e := newModeEnvWith(t, v1alpha1.WorkloadDrain{Namespaces: trainNS, Mode: v1alpha1.DrainAllowCompletion, MaxWait: dur(time.Hour)},
		func(s *v1alpha1.RemediationPolicySpec) { s.Drain.OnTimeout = v1alpha1.DrainForceDelete }, pdbRefuses("default/web-0"))
	e.trainer(nil)
	e.runPod("default", "web-0", e.node, nil)
	start := e.open(openWarning)
	e.clock.SetTime(start.Add(30 * time.Minute))
	e.settle()
	if _, ok := e.pod("default", "web-0"); !ok {
		t.Fatal("web-0 force-deleted at the drain timeout while trainer-0's wait ran")
	}
	e.clock.SetTime(start.Add(time.Hour + time.Second)) // trainer-0's wait is over: evicted
	e.settle()
	if _, ok := e.pod("train", "trainer-0"); ok {
		t.Fatal("trainer-0 still there past its maxWait")
	}
	e.clock.SetTime(start.Add(time.Hour + 10*time.Minute)) // the drain timeout from the wait's end: not past it
	e.settle()
	if _, ok := e.pod("default", "web-0"); !ok {
		t.Fatal("web-0 force-deleted before the drain timeout after the wait")
	}
	e.step(e.opts.Poll)
	if _, ok := e.pod("default", "web-0"); ok {
		t.Fatal("web-0 still there past the drain timeout after the wait")
	}
	nr := e.only(e.node)
	drained := ""
	for _, p := range nr.Status.Phases {
		if p.Phase == v1alpha1.PhaseDrained {
			drained = p.Message
		}
	}
	if !strings.Contains(drained, "waited on 1 pods under their drain modes (WaitTimedOut 1)") {
		t.Errorf("Drained message %q, want the waits' summary", drained)
	}
}

// TestCheckpointHandshake: the controller asks (annotations, an Event,
// the POST), then evicts once the workload says it is done, once it exits,
// or at the deadline; a stale answer and a deadline the pod's owner moved
// change nothing.
func TestCheckpointHandshake(t *testing.T) {
	const grace = 20 * time.Minute
	for _, tc := range []struct {
		name    string
		answer  func(e *modeEnv, requested time.Time)
		after   time.Duration // from the request to the answer's effect
		outcome string
	}{
		{"done", func(e *modeEnv, _ time.Time) {
			e.editPod("train", "trainer-0", func(p *corev1.Pod) {
				p.Annotations[v1alpha1.AnnotationCheckpointDone] = e.clock.Now().UTC().Format(time.RFC3339)
			})
		}, 3 * time.Minute, v1alpha1.WaitCheckpointDone},
		{"exit", func(e *modeEnv, _ time.Time) {
			e.finishPod("train", "trainer-0")
		}, 3 * time.Minute, v1alpha1.WaitExited},
		{"timeout", func(*modeEnv, time.Time) {}, grace, v1alpha1.WaitTimedOut},
		{"stale-answer-and-moved-deadline", func(e *modeEnv, requested time.Time) {
			e.editPod("train", "trainer-0", func(p *corev1.Pod) {
				p.Annotations[v1alpha1.AnnotationCheckpointDone] = requested.Add(-time.Hour).UTC().Format(time.RFC3339)
				p.Annotations[v1alpha1.AnnotationCheckpointDeadline] = requested.Add(48 * time.Hour).UTC().Format(time.RFC3339)
			})
		}, grace, v1alpha1.WaitTimedOut},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newModeEnv(t, v1alpha1.WorkloadDrain{Namespaces: trainNS, Mode: v1alpha1.DrainCheckpointThenEvict, Grace: dur(grace)})
			e.trainer(map[string]string{v1alpha1.AnnotationCheckpointURL: "http://10.1.2.3:8080/checkpoint"})
			e.open(openWarning)
			p, _ := e.pod("train", "trainer-0")
			requested, err := time.Parse(time.RFC3339, p.Annotations[v1alpha1.AnnotationCheckpointRequestedAt])
			if err != nil {
				t.Fatalf("requested-at %q: %v", p.Annotations[v1alpha1.AnnotationCheckpointRequestedAt], err)
			}
			deadline := requested.Add(grace).UTC().Format(time.RFC3339)
			if got := p.Annotations[v1alpha1.AnnotationCheckpointDeadline]; got != deadline {
				t.Errorf("deadline annotation %q, want %q", got, deadline)
			}
			nrName := e.only(e.node).Name
			if r := p.Annotations[v1alpha1.AnnotationCheckpointReason]; !strings.Contains(r, nrName) || !strings.Contains(r, v1alpha1.ReasonGPUFailurePredicted) {
				t.Errorf("reason annotation %q, want the incident and the fault", r)
			}
			if evs := e.events.find("trainer-0", v1alpha1.EventReasonCheckpointRequested); len(evs) != 1 || evs[0].kind != corev1.EventTypeNormal {
				t.Errorf("pod Events %+v, want one Normal CheckpointRequested", evs)
			}
			posts := e.poster.all()
			want := CheckpointRequest{Pod: "train/trainer-0", RequestedAt: p.Annotations[v1alpha1.AnnotationCheckpointRequestedAt],
				Deadline: deadline, Reason: p.Annotations[v1alpha1.AnnotationCheckpointReason]}
			if len(posts) != 1 || posts[0].url != "http://10.1.2.3:8080/checkpoint" || posts[0].req != want {
				t.Errorf("posts %+v, want one to the pod's URL with %+v", posts, want)
			}
			if recs := e.auditOf(audit.CheckpointRequested); len(recs) != 1 || recs[0].Pod != "train/trainer-0" {
				t.Errorf("CheckpointRequested records %+v, want one", recs)
			}

			e.step(time.Minute)
			tc.answer(e, requested)
			e.clock.SetTime(requested.Add(tc.after))
			e.settle()
			if _, ok := e.pod("train", "trainer-0"); !ok && tc.outcome == v1alpha1.WaitTimedOut {
				t.Fatal("evicted before the deadline")
			}
			e.step(e.opts.Poll)
			if w := e.wait("train/trainer-0"); w.Outcome != tc.outcome {
				t.Fatalf("outcome %q, want %q", w.Outcome, tc.outcome)
			}
			nr := e.only(e.node)
			if tc.outcome == v1alpha1.WaitExited {
				if len(nr.Status.EvictedPods) != 0 {
					t.Errorf("evicted %v, want nothing: the pod exited", nr.Status.EvictedPods)
				}
			} else if _, ok := e.pod("train", "trainer-0"); ok || len(nr.Status.EvictedPods) != 1 {
				t.Errorf("pod there = %v, evicted %v: want it evicted", ok, nr.Status.EvictedPods)
			}
			if nr.Status.Phase != v1alpha1.PhaseSucceeded {
				t.Errorf("phase %s, want the CordonOnly incident done", nr.Status.Phase)
			}
			if len(e.poster.all()) != 1 {
				t.Errorf("%d posts, want the one request", len(e.poster.all()))
			}
		})
	}
}

// TestCheckpointWaitSurvivesARestart: a controller that dies mid-wait is
// replaced by one that neither asks again nor forgets the deadline: both
// live in the pod's annotations and the incident's status.
func TestCheckpointWaitSurvivesARestart(t *testing.T) {
	e := newModeEnv(t, v1alpha1.WorkloadDrain{Namespaces: trainNS, Mode: v1alpha1.DrainCheckpointThenEvict, Grace: dur(time.Hour)})
	e.trainer(nil)
	start := e.open(openFatal) // bounded to 5m
	p, _ := e.pod("train", "trainer-0")
	asked := p.Annotations[v1alpha1.AnnotationCheckpointRequestedAt]
	e.step(2 * time.Minute)
	e.restart()
	e.step(time.Minute)
	p, _ = e.pod("train", "trainer-0")
	if got := p.Annotations[v1alpha1.AnnotationCheckpointRequestedAt]; got != asked {
		t.Errorf("requested-at %q after the restart, want the first request %q", got, asked)
	}
	if recs := e.auditOf(audit.CheckpointRequested); len(recs) != 1 {
		t.Errorf("%d CheckpointRequested records, want 1", len(recs))
	}
	e.restart()
	e.clock.SetTime(start.Truncate(time.Second).Add(FatalWaitBound))
	e.settle()
	if _, ok := e.pod("train", "trainer-0"); !ok {
		t.Fatal("evicted before the deadline the first controller set")
	}
	e.step(e.opts.Poll)
	if _, ok := e.pod("train", "trainer-0"); ok {
		t.Fatal("still there past the deadline the first controller set")
	}
	if w := e.wait("train/trainer-0"); w.Outcome != v1alpha1.WaitTimedOut {
		t.Errorf("outcome %q, want WaitTimedOut", w.Outcome)
	}
}

// TestCheckpointRequestOfAnEarlierIncidentIsAskedAgain: a pod that still
// carries an old request (and an old answer) is asked afresh.
func TestCheckpointRequestOfAnEarlierIncidentIsAskedAgain(t *testing.T) {
	e := newModeEnv(t, v1alpha1.WorkloadDrain{Namespaces: trainNS, Mode: v1alpha1.DrainCheckpointThenEvict, Grace: dur(time.Hour)})
	old := t0.Add(-24 * time.Hour).Format(time.RFC3339)
	e.trainer(map[string]string{v1alpha1.AnnotationCheckpointRequestedAt: old, v1alpha1.AnnotationCheckpointDone: old})
	e.open(openWarning)
	p, ok := e.pod("train", "trainer-0")
	if !ok {
		t.Fatal("evicted on an old answer")
	}
	if p.Annotations[v1alpha1.AnnotationCheckpointRequestedAt] == old {
		t.Error("the old request was not replaced")
	}
}

// TestWorkloadEntriesFirstMatchWins: entries match by namespace and
// selector together; the first match decides; no match is Immediate.
func TestWorkloadEntriesFirstMatchWins(t *testing.T) {
	pol, err := newPolicy(&v1alpha1.RemediationPolicy{Spec: v1alpha1.RemediationPolicySpec{Drain: v1alpha1.DrainSpec{Workloads: []v1alpha1.WorkloadDrain{
		{Namespaces: trainNS, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "batch"}}, Mode: v1alpha1.DrainAllowCompletion},
		{Namespaces: trainNS, Mode: v1alpha1.DrainCheckpointThenEvict},
		{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "batch"}}, Mode: v1alpha1.DrainDeleteAfterTimeout},
	}}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		ns, tier string
		want     v1alpha1.DrainMode
	}{
		{"train", "batch", v1alpha1.DrainAllowCompletion},
		{"train", "web", v1alpha1.DrainCheckpointThenEvict},
		{"other", "batch", v1alpha1.DrainDeleteAfterTimeout},
		{"other", "web", v1alpha1.DrainImmediate},
	} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: tc.ns, Labels: map[string]string{"tier": tc.tier}}}
		got := v1alpha1.DrainImmediate
		if r := pol.workloadFor(pod); r != nil {
			got = r.Mode
		}
		if got != tc.want {
			t.Errorf("%s/%s: %s, want %s", tc.ns, tc.tier, got, tc.want)
		}
	}
}

func TestIncidentSeverity(t *testing.T) {
	for _, tc := range []struct {
		trigger v1alpha1.Trigger
		want    faultSeverity
	}{
		{v1alpha1.Trigger{Type: gpuCondition, Reason: "NvidiaXID79Error"}, severityGone},
		{v1alpha1.Trigger{Type: gpuCondition, Reason: "NvidiaGPUMissing"}, severityGone},
		{v1alpha1.Trigger{Type: gpuCondition, Reason: "NvidiaXID48Error"}, severityFatal},
		{v1alpha1.Trigger{Type: "Ready", Reason: "KubeletNotReady"}, severityFatal},
		{v1alpha1.Trigger{Type: v1alpha1.ConditionGPUFailurePredicted, Reason: v1alpha1.ReasonGPUFailurePredicted}, severityWarning},
		{v1alpha1.Trigger{Type: "SomeNPDCondition", Reason: "NvidiaXID13Warning"}, severityWarning},
	} {
		if got := incidentSeverity(tc.trigger); got != tc.want {
			t.Errorf("%+v: %s, want %s", tc.trigger, got, tc.want)
		}
	}
	if FatalWaitBound != 5*time.Minute || severityFatal.bound(time.Hour) != FatalWaitBound || severityGone.bound(time.Hour) != 0 ||
		severityWarning.bound(6*time.Hour) != 6*time.Hour {
		t.Error("the documented bounds changed: update docs/remediation.md")
	}
}

// TestCheckpointRequestWrittenBeforeACrashIsAdopted: a controller that
// patched the pod and died before recording the wait is followed by one
// that takes the pod's request as its own instead of asking again.
func TestCheckpointRequestWrittenBeforeACrashIsAdopted(t *testing.T) {
	e := newModeEnv(t, v1alpha1.WorkloadDrain{Namespaces: trainNS, Mode: v1alpha1.DrainCheckpointThenEvict, Grace: dur(time.Hour)})
	asked := t0.Add(2 * time.Minute) // when the drain starts
	e.trainer(map[string]string{v1alpha1.AnnotationCheckpointRequestedAt: asked.Format(time.RFC3339)})
	start := e.open(openFatal)
	if !start.Equal(asked) {
		t.Fatalf("drain started at %v, the test wants %v", start, asked)
	}
	if recs := e.auditOf(audit.CheckpointRequested); len(recs) != 0 || len(e.poster.all()) != 0 {
		t.Errorf("asked again: %d records, %d posts", len(recs), len(e.poster.all()))
	}
	if w := e.wait("train/trainer-0"); !w.Since.Time.Equal(asked) || !w.Deadline.Time.Equal(asked.Add(FatalWaitBound)) {
		t.Errorf("wait %+v, want since %v until %v", w, asked, asked.Add(FatalWaitBound))
	}
}
