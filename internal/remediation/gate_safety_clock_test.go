package remediation

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/audit"
	"github.com/gpuheal/gpuheal/internal/provider/fake"
)

// The health gate's guards on a fake clock: a verdict is never lost or
// outlived, and nothing but the check's own pod speaks for it.

const dcgmFail = "dcgm-json-3x-handwritten-gpu3-memory-fail.json"

// stamping is the env's Create, stamping creation on the fake clock, with
// count called for each Job created.
func stamping(e **clockEnv, count func(client.Object) error) func(context.Context, client.WithWatch, client.Object, ...client.CreateOption) error {
	return func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		obj.SetCreationTimestamp(metav1.NewTime((*e).clock.Now()))
		if _, ok := obj.(*batchv1.Job); ok && count != nil {
			if err := count(obj); err != nil {
				return err
			}
		}
		return c.Create(ctx, obj, opts...)
	}
}

// assertNeverUncordoned fails if the incident uncordoned any node.
func (e *clockEnv) assertNeverUncordoned() {
	e.t.Helper()
	for _, r := range e.audit.Records() {
		if r.Kind == audit.Uncordoned {
			e.t.Fatalf("a node was uncordoned: %+v", r)
		}
	}
}

// TestGateVerdictSurvivesALostWrite: the write of a judged check's verdict
// fails (a conflict); the Job is still there, so the next reconcile judges
// the same run again instead of creating a new Job whose pass would
// outvote the failure.
func TestGateVerdictSurvivesALostWrite(t *testing.T) {
	var e *clockEnv
	created, conflicted := 0, false
	e = newClockEnv(t, interceptor.Funcs{
		Create: stamping(&e, func(client.Object) error { created++; return nil }),
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			if nr, ok := obj.(*v1alpha1.NodeRemediation); ok && !conflicted && len(nr.Status.Validation) > 0 && nr.Status.Validation[0].Outcome != "" {
				conflicted = true
				return apierrors.NewConflict(v1alpha1.GroupVersion.WithResource("noderemediations").GroupResource(), nr.Name, errors.New("someone else wrote"))
			}
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
	})
	e.gatePolicy(dcgmCheck())
	node := e.addNodes("gpu", 1)[0]
	e.gpuNode(node)
	e.rebootIntoValidating(node)
	e.runCheckJob(node, capture(t, dcgmFail), false)
	e.settle()
	e.step(e.opts.Poll) // the requeue after the conflict
	nr := e.only(node)
	if !conflicted || created != 1 {
		t.Fatalf("conflicted %v, %d Jobs created: want the lost write and one Job", conflicted, created)
	}
	if res := nr.Status.Validation[0]; res.Outcome != v1alpha1.CheckFailed || nr.Status.Action != v1alpha1.ActionReplace {
		t.Fatalf("result %+v, action %s: want the first run's failure and a replace", res, nr.Status.Action)
	}
	if len(e.checkJobs(node)) != 0 {
		t.Error("the judged Job was not deleted once its verdict was saved")
	}
	e.assertHeld(node)
	e.assertNeverUncordoned()
}

// TestGateStaleIncidentCreatesNoJob: a reconcile of a cached incident
// from before its check was judged finds no Job (it was deleted after the
// verdict) and must not create it again.
func TestGateStaleIncidentCreatesNoJob(t *testing.T) {
	e := newClockEnv(t)
	e.gatePolicy(dcgmCheck())
	node := e.addNodes("gpu", 1)[0]
	e.gpuNode(node)
	stale := e.rebootIntoValidating(node)
	e.runCheckJob(node, capture(t, dcgmFail), false)
	e.settle()
	if nr := e.only(node); nr.Status.Validation[0].Outcome != v1alpha1.CheckFailed {
		t.Fatalf("result %+v, want Failed", nr.Status.Validation[0])
	}
	n, _ := e.node(node)
	p, err := newPolicy(&v1alpha1.RemediationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec: v1alpha1.RemediationPolicySpec{Validation: &v1alpha1.ValidationSpec{Checks: []v1alpha1.ValidationCheck{dcgmCheck()}}}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.rems.validating(e.ctx, &incident{nr: &stale, node: n, policy: p})
	if !apierrors.IsConflict(err) {
		t.Errorf("validating a stale incident: %v, want a conflict", err)
	}
	if jobs := e.checkJobs(node); len(jobs) != 0 {
		t.Errorf("the judged check's Job was created again: %s", jobs[0].Name)
	}
}

// TestGateRecordedFailureIsFinal: the check's failure is recorded, and
// before the escalation is written the policy drops the check or goes;
// the failure still decides: the node is never uncordoned.
func TestGateRecordedFailureIsFinal(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(ctx context.Context, c client.Client) error
	}{
		{"the check dropped", func(ctx context.Context, c client.Client) error {
			var p v1alpha1.RemediationPolicy
			if err := c.Get(ctx, clientKey("p"), &p); err != nil {
				return err
			}
			p.Spec.Validation = nil
			return c.Update(ctx, &p)
		}},
		{"the policy deleted", func(ctx context.Context, c client.Client) error {
			return c.Delete(ctx, &v1alpha1.RemediationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p"}})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var e *clockEnv
			changed := false
			e = newClockEnv(t, interceptor.Funcs{
				Create: stamping(&e, nil),
				SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
					if nr, ok := obj.(*v1alpha1.NodeRemediation); ok && !changed && nr.Status.Phase == v1alpha1.PhaseReplacing {
						changed = true
						if err := tc.change(ctx, c); err != nil {
							return err
						}
						return apierrors.NewConflict(v1alpha1.GroupVersion.WithResource("noderemediations").GroupResource(), nr.Name, errors.New("someone else wrote"))
					}
					return c.SubResource(sub).Update(ctx, obj, opts...)
				},
			})
			e.gatePolicy(agentCheck())
			node := e.addNodes("gpu", 1)[0]
			e.rebootIntoValidating(node)
			e.agentReport(node, e.clock.Now(), "", v1alpha1.AgentCheckGPUsPresent)
			e.step(time.Minute)
			nr := e.only(node)
			if !changed || nr.Status.Validation[0].Outcome != v1alpha1.CheckFailed {
				t.Fatalf("changed %v, results %+v: want the failure recorded and the policy changed", changed, nr.Status.Validation)
			}
			if nr.Status.Phase == v1alpha1.PhaseSucceeded || nr.Status.Action != v1alpha1.ActionReplace {
				t.Fatalf("phase %s (%s), action %s: want the failure to escalate", nr.Status.Phase, nr.Status.Message, nr.Status.Action)
			}
			e.assertNeverUncordoned()
			e.assertHeld(node)
		})
	}
}

// TestGateDroppedMidCheckFallsBack: the policy stops validating while a
// check Job runs: the Job goes and the node returns as without the gate,
// Ready and healthy for the recovery hold.
func TestGateDroppedMidCheckFallsBack(t *testing.T) {
	e := newClockEnv(t)
	e.gatePolicy(dcgmCheck())
	node := e.addNodes("gpu", 1)[0]
	e.gpuNode(node)
	e.rebootIntoValidating(node)
	if len(e.checkJobs(node)) != 1 {
		t.Fatal("no check Job")
	}
	var p v1alpha1.RemediationPolicy
	if err := e.c.Get(e.ctx, clientKey("p"), &p); err != nil {
		t.Fatal(err)
	}
	p.Spec.Validation = nil
	if err := e.c.Update(e.ctx, &p); err != nil {
		t.Fatal(err)
	}
	e.step(e.opts.Poll)
	nr := e.only(node)
	if nr.Status.Phase != v1alpha1.PhaseSucceeded || nr.Status.Reason != v1alpha1.ReasonRecovered {
		t.Fatalf("phase %s/%s (%s), want Succeeded/Recovered", nr.Status.Phase, nr.Status.Reason, nr.Status.Message)
	}
	if len(e.checkJobs(node)) != 0 {
		t.Error("the open check's Job was not deleted")
	}
	if n, _ := e.node(node); n.Spec.Unschedulable || hasTaint(n) || hasValidatingTaint(n) {
		t.Errorf("node not back in service: %+v", n.Spec)
	}
}

// TestGateReplacementTaintedAtOnce: the replacement is tainted as soon as
// the incident knows it, before it has been healthy for the recovery hold,
// so no work lands on it before its checks.
func TestGateReplacementTaintedAtOnce(t *testing.T) {
	e := newClockEnv(t)
	e.gatePolicy(agentCheck())
	node := e.addNodes("gpu", 1)[0]
	e.rebootIntoValidating(node)
	e.agentReport(node, e.clock.Now(), "", v1alpha1.AgentCheckGPUsPresent)
	e.settle()
	e.replaceMachine(node, "new")
	repl := "new-0000"
	n, _ := e.node(repl)
	for i := range n.Status.Conditions {
		n.Status.Conditions[i].LastTransitionTime = metav1.NewTime(e.clock.Now()) // just joined
	}
	if err := e.c.Status().Update(e.ctx, n); err != nil {
		t.Fatal(err)
	}
	e.step(e.opts.Poll)
	nr := e.only(node)
	if nr.Status.Phase != v1alpha1.PhaseVerifying || nr.Status.Replacement != repl {
		t.Fatalf("phase %s (%s), replacement %q: want Verifying with the replacement known", nr.Status.Phase, nr.Status.Message, nr.Status.Replacement)
	}
	if n, _ := e.node(repl); !hasValidatingTaint(n) {
		t.Fatalf("replacement not tainted %s before its recovery hold: %v", v1alpha1.TaintValidating, n.Spec.Taints)
	}
}

// TestGateJobCreateErrorTimesOut: a Job the API server never takes (a
// server error, not a refusal) ends as Error at the check's timeout,
// with the error in its message, instead of holding the incident forever.
func TestGateJobCreateErrorTimesOut(t *testing.T) {
	var e *clockEnv
	e = newClockEnv(t, interceptor.Funcs{Create: stamping(&e, func(_ client.Object) error {
		return apierrors.NewInternalError(errors.New("etcdserver: request timed out"))
	})})
	e.crashes = 1 << 20
	c := dcgmCheck()
	c.Timeout = &metav1.Duration{Duration: 10 * time.Minute}
	e.gatePolicy(c)
	node := e.addNodes("gpu", 1)[0]
	e.gpuNode(node)
	e.rebootIntoValidating(node)
	e.step(9 * time.Minute)
	if nr := e.only(node); nr.Status.Validation[0].Outcome != "" {
		t.Fatalf("result %+v before the timeout", nr.Status.Validation[0])
	}
	e.step(time.Minute)
	nr := e.only(node)
	if res := nr.Status.Validation[0]; res.Outcome != v1alpha1.CheckError || !contains(res.Message, "etcdserver: request timed out") {
		t.Fatalf("result %+v, want Error at the timeout naming the last error", res)
	}
	if nr.Status.Phase == v1alpha1.PhaseValidating {
		t.Errorf("still Validating after the check's timeout")
	}
	e.assertNeverUncordoned()
}

// TestGateUnhealthyDuringChecksFails: a fault that surfaces while the
// checks run fails the gate though every check passed.
func TestGateUnhealthyDuringChecksFails(t *testing.T) {
	e := newClockEnv(t)
	e.gatePolicy(dcgmCheck())
	node := e.addNodes("gpu", 1)[0]
	e.gpuNode(node)
	e.rebootIntoValidating(node)
	e.setCondition(node, gpuCondition, corev1.ConditionFalse, "NvidiaXID79Error", xidMessage)
	e.runCheckJob(node, capture(t, "dcgm-text-3.3.3-a100-pass.txt"), true)
	e.settle()
	nr := e.only(node)
	last := nr.Status.Validation[len(nr.Status.Validation)-1]
	if nr.Status.Validation[0].Outcome != v1alpha1.CheckPassed || last.Name != nodeHealthCheck || last.Outcome != v1alpha1.CheckFailed || !contains(last.Value, "NvidiaXID79Error") {
		t.Fatalf("results %+v, want dcgm Passed then the node's health Failed", nr.Status.Validation)
	}
	if nr.Status.Action != v1alpha1.ActionReplace || len(e.prov.CallsTo(fake.MethodReplace)) != 1 {
		t.Errorf("action %s: want the node replaced", nr.Status.Action)
	}
	e.assertNeverUncordoned()
	e.assertHeld(node)
}

// TestGateForgedPodIgnored: pods with the Job's label that are not the
// Job's own (a mirror pod the node's kubelet made, a pod without the Job
// as controller) never speak for the check, however newer and passing.
func TestGateForgedPodIgnored(t *testing.T) {
	e := newClockEnv(t)
	e.gatePolicy(dcgmCheck())
	node := e.addNodes("gpu", 1)[0]
	e.gpuNode(node)
	e.rebootIntoValidating(node)
	job := e.runCheckJob(node, capture(t, dcgmFail), false)
	e.clock.Step(time.Second)
	pass := capture(t, "dcgm-text-3.3.3-a100-pass.txt")
	for i, forged := range []metav1.ObjectMeta{
		{Annotations: map[string]string{corev1.MirrorPodAnnotationKey: "x"},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(&job, batchv1.SchemeGroupVersion.WithKind("Job"))}},
		{}, // no owner
	} {
		forged.Namespace, forged.Name, forged.Labels = job.Namespace, job.Name+"-forged"+strings.Repeat("x", i), job.Spec.Template.Labels
		pod := &corev1.Pod{ObjectMeta: forged, Spec: *job.Spec.Template.Spec.DeepCopy()}
		pod.Spec.NodeName = node
		e.create(pod)
		pod.Status = corev1.PodStatus{Phase: corev1.PodSucceeded, ContainerStatuses: []corev1.ContainerStatus{{Name: checkContainer,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Message: pass}}}}}
		if err := e.c.Status().Update(e.ctx, pod); err != nil {
			t.Fatal(err)
		}
	}
	e.settle()
	nr := e.only(node)
	if res := nr.Status.Validation[0]; res.Outcome != v1alpha1.CheckFailed {
		t.Fatalf("result %+v, want the Job's own pod's failure", res)
	}
	e.assertNeverUncordoned()
}

// TestGateNodeDeletedDeletesJob: an incident cancelled because its node
// went takes the open check's Job with it.
func TestGateNodeDeletedDeletesJob(t *testing.T) {
	e := newClockEnv(t)
	e.gatePolicy(dcgmCheck())
	node := e.addNodes("gpu", 1)[0]
	e.gpuNode(node)
	e.rebootIntoValidating(node)
	if len(e.checkJobs(node)) != 1 {
		t.Fatal("no check Job")
	}
	if err := e.c.Delete(e.ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}); err != nil {
		t.Fatal(err)
	}
	e.step(e.opts.Poll)
	nr := e.only(node)
	if nr.Status.Phase != v1alpha1.PhaseCancelled || nr.Status.Reason != v1alpha1.ReasonNodeDeleted {
		t.Fatalf("phase %s/%s, want Cancelled/NodeDeleted", nr.Status.Phase, nr.Status.Reason)
	}
	if len(e.checkJobs(node)) != 0 {
		t.Error("the check Job outlived its incident")
	}
}
