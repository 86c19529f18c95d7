package remediation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/audit"
	"github.com/gpuheal/gpuheal/internal/provider/fake"
)

// gpu3 is the faulty GPU of these tests, as the agent names it.
var gpu3 = v1alpha1.GPURef{Index: 3, UUID: "GPU-5a3f2e1b-8c4d-4e6f-9a0b-1c2d3e4f5a6b", BusID: "00000000:3B:00.0"}

// exclusiveFault is GPU 3 with a double-bit ECC error, handed whole to
// the pods named.
func exclusiveFault(pods ...string) v1alpha1.GPUFault {
	return v1alpha1.GPUFault{GPURef: gpu3, Reason: "DBE", Action: "reset-gpu", Pods: pods, Sharing: v1alpha1.GPUSharingExclusive}
}

// reportFaults writes the agent's gpu-faults annotation.
func (e *clockEnv) reportFaults(node string, gpus ...v1alpha1.GPUFault) {
	e.t.Helper()
	b, err := json.Marshal(v1alpha1.GPUFaultReport{Time: metav1.NewTime(e.clock.Now()), GPUs: gpus})
	if err != nil {
		e.t.Fatal(err)
	}
	e.annotate(node, v1alpha1.AnnotationGPUFaults, string(b))
}

func (e *clockEnv) annotate(node, key, value string) {
	e.t.Helper()
	e.editNode(node, func(n *corev1.Node) {
		if n.Annotations == nil {
			n.Annotations = map[string]string{}
		}
		if value == "" {
			delete(n.Annotations, key)
			return
		}
		n.Annotations[key] = value
	})
}

// answerReset is the agent answering the request on its node.
func (e *clockEnv) answerReset(node string, rep v1alpha1.GPUResetReport) {
	e.t.Helper()
	if rep.StartedAt.IsZero() {
		rep.StartedAt = metav1.NewTime(e.clock.Now())
	}
	b, err := json.Marshal(rep)
	if err != nil {
		e.t.Fatal(err)
	}
	e.annotate(node, v1alpha1.AnnotationGPUReset, string(b))
}

// succeeded is the agent's answer that the reset worked.
func (e *clockEnv) succeeded(nr v1alpha1.NodeRemediation) v1alpha1.GPUResetReport {
	done := metav1.NewTime(e.clock.Now())
	return v1alpha1.GPUResetReport{RequestID: nr.Status.GPUReset.RequestID, GPUs: nr.Status.GPUReset.GPUs,
		Outcome: v1alpha1.GPUResetSucceeded, FinishedAt: &done, Steps: []v1alpha1.GPUResetStep{
			{Name: "check-processes", OK: true, Time: metav1.NewMicroTime(e.clock.Now())},
			{Name: "reset", OK: true, Time: metav1.NewMicroTime(e.clock.Now()), Message: "nvidia-smi -r -i 00000000:3B:00.0"},
			{Name: "verify", OK: true, Time: metav1.NewMicroTime(e.clock.Now())}}}
}

// podExists reports whether the pod is still there.
func (e *clockEnv) podExists(ns, name string) bool {
	e.t.Helper()
	var p corev1.Pod
	err := e.c.Get(e.ctx, client.ObjectKey{Namespace: ns, Name: name}, &p)
	if err != nil && !apierrors.IsNotFound(err) {
		e.t.Fatal(err)
	}
	return err == nil
}

func cordoned(n *corev1.Node) bool { return n.Spec.Unschedulable || hasTaint(n) }

// resetScene: a node whose agent reports GPU 3 faulty and held by pods
// train-a and train-b; pod other runs on the node without a GPU of the
// report, pod elsewhere on another node (the report lists it anyway).
// The incident is Resetting when it returns.
func resetScene(t *testing.T, edit func(*v1alpha1.RemediationPolicySpec), fault v1alpha1.GPUFault) (*clockEnv, string) {
	t.Helper()
	e := newClockEnv(t)
	if edit == nil {
		edit = func(*v1alpha1.RemediationPolicySpec) {}
	}
	e.policy("p", edit)
	nodes := e.addNodes("gpu", 2)
	node := nodes[0]
	for _, p := range []string{"train-a", "train-b", "other"} {
		e.runPod("default", p, node, nil)
	}
	e.runPod("default", "elsewhere", nodes[1], nil)
	e.reportFaults(node, fault)
	e.breakGPU(node, "reset-gpu")
	e.step(2 * time.Minute)
	if nr := e.only(node); nr.Status.Phase != v1alpha1.PhaseResetting {
		t.Fatalf("phase %s (%s), want Resetting", nr.Status.Phase, nr.Status.Message)
	}
	return e, node
}

// TestGPUResetPartialDrain: with whole GPUs, only the pods the agent
// lists for the faulty GPU and the API server shows on the node are
// evicted; the node is not cordoned; a Succeeded answer, then the node
// healthy without the GPU in its report, ends the incident GPUReset with
// no provider call.
func TestGPUResetPartialDrain(t *testing.T) {
	e, node := resetScene(t, nil, exclusiveFault("default/train-a", "default/train-b", "default/elsewhere"))
	nr := e.only(node)
	g := nr.Status.GPUReset
	if g == nil || !g.PartialDrain || g.RequestID != nr.Name+"-reset-1" || g.RequestedAt == nil || !sameGPUs(g.GPUs, []v1alpha1.GPURef{gpu3}) {
		t.Fatalf("status.gpuReset %+v: want a partial drain and request %s-reset-1 for GPU 3", g, nr.Name)
	}
	if nr.Status.Action != v1alpha1.ActionResetGPU || nr.Status.Attempts != 1 {
		t.Errorf("action %s attempt %d, want ResetGPU 1", nr.Status.Action, nr.Status.Attempts)
	}
	for pod, want := range map[string]bool{"train-a": false, "train-b": false, "other": true, "elsewhere": true} {
		if got := e.podExists("default", pod); got != want {
			t.Errorf("pod %s exists = %v, want %v", pod, got, want)
		}
	}
	if n, _ := e.node(node); cordoned(n) {
		t.Errorf("node cordoned (%v, taints %v) for a partial drain", n.Spec.Unschedulable, n.Spec.Taints)
	}
	if evs := e.events.find(node, v1alpha1.ReasonPartialDrain); len(evs) != 1 || !contains(evs[0].note, "default/elsewhere") {
		t.Errorf("PartialDrain events on the node %+v: want one naming the pod not on the node", evs)
	}
	if ps := phasesOf(nr); contains(phaseList(ps), string(v1alpha1.PhaseCordoned)) {
		t.Errorf("phases %v: a partial drain never enters Cordoned", ps)
	}

	// The agent resets, answers, and reports the GPU healthy.
	e.answerReset(node, e.succeeded(nr))
	e.reportFaults(node)
	e.healGPU(node)
	e.settle()
	if nr := e.only(node); nr.Status.Phase != v1alpha1.PhaseVerifying || nr.Status.GPUReset.Outcome != v1alpha1.GPUResetSucceeded || len(nr.Status.GPUReset.Steps) != 3 {
		t.Fatalf("after the answer: phase %s, gpuReset %+v; want Verifying with the agent's 3 steps", nr.Status.Phase, nr.Status.GPUReset)
	}
	e.step(time.Minute) // the recovery hold
	nr = e.only(node)
	if nr.Status.Phase != v1alpha1.PhaseSucceeded || nr.Status.Reason != v1alpha1.ReasonGPUReset {
		t.Fatalf("phase %s reason %s (%s), want Succeeded GPUReset", nr.Status.Phase, nr.Status.Reason, nr.Status.Message)
	}
	if calls := e.prov.Calls(); len(e.prov.CallsTo(fake.MethodReboot))+len(e.prov.CallsTo(fake.MethodReplace)) != 0 {
		t.Errorf("provider calls %+v, want none", calls)
	}
	recs := e.audit.Records()
	for k, want := range map[audit.Kind]int{audit.DrainScoped: 1, audit.Evicted: 2, audit.ResetRequested: 1, audit.ResetFinished: 1, audit.Cordoned: 0, audit.Succeeded: 1} {
		if got := countKind(recs, k); got != want {
			t.Errorf("%d %s audit records, want %d", got, k, want)
		}
	}
	for _, r := range recs {
		if r.Kind == audit.ResetFinished && (r.Reason != v1alpha1.GPUResetSucceeded || !contains(r.Message, "reset ok") || r.RequestID != nr.Name+"-reset-1") {
			t.Errorf("ResetFinished record %+v: want Succeeded with the steps and the request ID", r)
		}
	}
}

func phaseList(ps []v1alpha1.Phase) string {
	var s []string
	for _, p := range ps {
		s = append(s, string(p))
	}
	return strings.Join(s, ",")
}

// TestGPUResetWholeNodeDrain: when the GPU's pods cannot be told apart
// (shared, MIG, unknown, the agent could not read them) or the policy says
// so, the node is cordoned and drained whole; a good reset uncordons it.
func TestGPUResetWholeNodeDrain(t *testing.T) {
	shared := func(mode string) v1alpha1.GPUFault {
		f := exclusiveFault("default/train-a")
		f.Sharing = mode
		return f
	}
	noPods := exclusiveFault()
	noPods.PodsError = "dial unix /var/lib/kubelet/pod-resources/kubelet.sock: connect: no such file or directory"
	for _, tc := range []struct {
		name  string
		fault v1alpha1.GPUFault
		edit  func(*v1alpha1.RemediationPolicySpec)
		scope string
	}{
		{"Shared", shared(v1alpha1.GPUSharingShared), nil, "shared (Shared)"},
		{"MIG", shared(v1alpha1.GPUSharingMIG), nil, "shared (MIG)"},
		{"Unknown", shared(v1alpha1.GPUSharingUnknown), nil, "shared (Unknown)"},
		{"podsError", noPods, nil, "could not tell which pods hold GPU 3"},
		{"partialDrain false", exclusiveFault("default/train-a"), func(s *v1alpha1.RemediationPolicySpec) { s.GPUReset.PartialDrain = new(bool) }, "partialDrain to false"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, node := resetScene(t, tc.edit, tc.fault)
			nr := e.only(node)
			g := nr.Status.GPUReset
			if g.PartialDrain || !contains(g.DrainScope, tc.scope) {
				t.Errorf("partialDrain %v, drainScope %q: want the whole node, saying %q", g.PartialDrain, g.DrainScope, tc.scope)
			}
			if n, _ := e.node(node); !cordoned(n) {
				t.Error("node not cordoned for a whole-node drain")
			}
			for _, pod := range []string{"train-a", "train-b", "other"} {
				if e.podExists("default", pod) {
					t.Errorf("pod %s still on the node", pod)
				}
			}
			if !e.podExists("default", "elsewhere") {
				t.Error("pod elsewhere, on another node, was evicted")
			}
			if evs := e.events.find(node, v1alpha1.ReasonWholeNodeDrain); len(evs) != 1 {
				t.Errorf("WholeNodeDrain events %+v, want one", evs)
			}
			e.answerReset(node, e.succeeded(nr))
			e.reportFaults(node)
			e.healGPU(node)
			e.settle()
			e.step(time.Minute)
			nr = e.only(node)
			if n, _ := e.node(node); nr.Status.Phase != v1alpha1.PhaseSucceeded || cordoned(n) || !contains(nr.Status.Message, "uncordoned") {
				t.Errorf("phase %s (%s), cordoned %v: want Succeeded and uncordoned", nr.Status.Phase, nr.Status.Message, cordoned(n))
			}
		})
	}
}

// TestGPUResetFailsOverToReboot: an answer Failed, none within the
// timeout, or an answer about other GPUs: the node is cordoned, drained
// whole and rebooted once by the provider; the status keeps the answer.
func TestGPUResetFailsOverToReboot(t *testing.T) {
	for _, tc := range []struct {
		name       string
		answer     func(e *clockEnv, nr v1alpha1.NodeRemediation) // nil: no answer
		wantReason string
	}{
		{"failed", func(e *clockEnv, nr v1alpha1.NodeRemediation) {
			rep := e.succeeded(nr)
			rep.Outcome, rep.Reason, rep.Message = v1alpha1.GPUResetFailed, v1alpha1.ResetReasonInUse, "pid 4242 still holds the GPU"
			e.answerReset(nr.Spec.NodeName, rep)
		}, v1alpha1.ResetReasonInUse},
		{"no answer", nil, v1alpha1.ResetReasonTimeout},
		{"another GPU", func(e *clockEnv, nr v1alpha1.NodeRemediation) {
			rep := e.succeeded(nr)
			rep.GPUs = []v1alpha1.GPURef{{Index: 5}}
			e.answerReset(nr.Spec.NodeName, rep)
		}, v1alpha1.ResetReasonError},
		{"unreadable", func(e *clockEnv, nr v1alpha1.NodeRemediation) {
			e.annotate(nr.Spec.NodeName, v1alpha1.AnnotationGPUReset, `{"requestID":`)
		}, v1alpha1.ResetReasonError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, node := resetScene(t, nil, exclusiveFault("default/train-a"))
			nr := e.only(node)
			if tc.answer != nil {
				e.step(10 * time.Second)
				tc.answer(e, nr)
				e.settle()
			} else {
				e.step(3 * time.Minute) // exactly the timeout: still waiting
				if nr := e.only(node); nr.Status.Phase != v1alpha1.PhaseResetting {
					t.Fatalf("phase %s at the timeout, want still Resetting", nr.Status.Phase)
				}
				e.step(e.opts.Poll)
			}
			nr = e.only(node)
			g := nr.Status.GPUReset
			if nr.Status.Action != v1alpha1.ActionReboot || nr.Status.Phase != v1alpha1.PhaseVerifying || nr.Status.Attempts != 2 {
				t.Fatalf("action %s phase %s (%s) attempt %d: want Reboot, Verifying, attempt 2", nr.Status.Action, nr.Status.Phase, nr.Status.Message, nr.Status.Attempts)
			}
			if g.Outcome != v1alpha1.GPUResetFailed || g.Reason != tc.wantReason || g.FinishedAt == nil {
				t.Errorf("gpuReset %+v: want Failed %s", g, tc.wantReason)
			}
			if calls := e.prov.CallsTo(fake.MethodReboot); len(calls) != 1 || calls[0].Node != node {
				t.Errorf("reboot calls %+v, want one of %s", calls, node)
			}
			if n, _ := e.node(node); !cordoned(n) || e.podExists("default", "other") {
				t.Errorf("cordoned %v, pod other left %v: want the whole node drained before the reboot", cordoned(n), e.podExists("default", "other"))
			}
			esc := 0
			for _, r := range e.audit.Records() {
				if r.Kind == audit.Escalated && r.Reason == v1alpha1.ReasonResetFailed && r.Action == string(v1alpha1.ActionReboot) {
					esc++
				}
			}
			if esc != 1 {
				t.Errorf("%d Escalated GPUResetFailed records, want 1", esc)
			}
			if !contains(phaseList(phasesOf(nr)), "Resetting,Cordoned,Draining,Drained,Rebooting,Verifying") {
				t.Errorf("phases %v: want Resetting then the reboot path", phasesOf(nr))
			}
		})
	}
}

// TestGPUResetIgnoresAnotherRequestsAnswer: an answer to another request
// ID (an earlier incident's, a forged one) is not this request's; the
// incident waits on and times out to a reboot.
func TestGPUResetIgnoresAnotherRequestsAnswer(t *testing.T) {
	e, node := resetScene(t, nil, exclusiveFault("default/train-a"))
	nr := e.only(node)
	rep := e.succeeded(nr)
	rep.RequestID = node + "-0a0b0c0d-reset-1"
	e.answerReset(node, rep)
	e.step(time.Minute)
	if nr := e.only(node); nr.Status.Phase != v1alpha1.PhaseResetting || nr.Status.GPUReset.Outcome != "" {
		t.Fatalf("phase %s outcome %q after another request's answer, want Resetting with none", nr.Status.Phase, nr.Status.GPUReset.Outcome)
	}
	e.step(2*time.Minute + e.opts.Poll)
	if nr := e.only(node); nr.Status.GPUReset.Reason != v1alpha1.ResetReasonTimeout || nr.Status.Action != v1alpha1.ActionReboot {
		t.Fatalf("gpuReset %+v action %s: want a timeout and a reboot", nr.Status.GPUReset, nr.Status.Action)
	}
}

// TestGPUResetResumesAfterRestart: a controller that restarts after the
// request was written waits on the same request; it never writes another.
func TestGPUResetResumesAfterRestart(t *testing.T) {
	e, node := resetScene(t, nil, exclusiveFault("default/train-a"))
	before := e.only(node)
	e.restart()
	e.step(time.Minute)
	e.restart()
	e.settle()
	nr := e.only(node)
	if nr.Status.Phase != v1alpha1.PhaseResetting || nr.Status.GPUReset.RequestID != before.Status.GPUReset.RequestID ||
		!nr.Status.GPUReset.RequestedAt.Equal(before.Status.GPUReset.RequestedAt) || nr.Status.Attempts != 1 {
		t.Fatalf("after restarts: phase %s, gpuReset %+v, attempt %d; want the same request waited on", nr.Status.Phase, nr.Status.GPUReset, nr.Status.Attempts)
	}
	if n := countKind(e.audit.Records(), audit.ResetRequested); n != 1 {
		t.Errorf("%d ResetRequested records, want 1", n)
	}
	e.answerReset(node, e.succeeded(nr))
	e.reportFaults(node)
	e.healGPU(node)
	e.settle()
	e.step(time.Minute)
	if nr := e.only(node); nr.Status.Phase != v1alpha1.PhaseSucceeded {
		t.Fatalf("phase %s (%s), want Succeeded", nr.Status.Phase, nr.Status.Message)
	}
}

// TestGPUResetDecision: what the fault report makes of advice reset-gpu.
func TestGPUResetDecision(t *testing.T) {
	replace := v1alpha1.GPUFault{GPURef: v1alpha1.GPURef{Index: 5, UUID: "GPU-00000000-0000-0000-0000-000000000005"}, Reason: "XID_79", Action: "replace", Sharing: v1alpha1.GPUSharingExclusive}
	reboot := replace
	reboot.Action, reboot.Reason = "reboot", "XID_119"
	for _, tc := range []struct {
		name       string
		annotation string // "-": none
		faults     []v1alpha1.GPUFault
		want       v1alpha1.Action
		msg        string
		badEvent   bool
	}{
		{name: "reset", faults: []v1alpha1.GPUFault{exclusiveFault()}, want: v1alpha1.ActionResetGPU, msg: "GPU 3 (" + gpu3.UUID + ") DBE"},
		{name: "a GPU to replace", faults: []v1alpha1.GPUFault{exclusiveFault(), replace}, want: v1alpha1.ActionReplace, msg: "GPU 5"},
		{name: "a GPU to reboot", faults: []v1alpha1.GPUFault{exclusiveFault(), reboot}, want: v1alpha1.ActionReboot, msg: "needs a reboot"},
		{name: "no report", annotation: "-", want: v1alpha1.ActionReboot, msg: "no annotation " + v1alpha1.AnnotationGPUFaults},
		{name: "empty report", faults: nil, want: v1alpha1.ActionReboot, msg: "lists no GPU a reset repairs"},
		{name: "not JSON", annotation: `{"gpus": [`, want: v1alpha1.ActionReboot, msg: "annotation " + v1alpha1.AnnotationGPUFaults + ": not a GPU fault report", badEvent: true},
		{name: "bad sharing", annotation: `{"gpus":[{"index":3,"action":"reset-gpu","sharing":"Sometimes"}]}`, want: v1alpha1.ActionReboot, msg: `gpus[0]: sharing "Sometimes"`, badEvent: true},
		{name: "too big", annotation: `{"gpus":[],"x":"` + strings.Repeat("a", maxGPUFaultsBytes) + `"}`, want: v1alpha1.ActionReboot, msg: "more than the 65536 allowed", badEvent: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newClockEnv(t)
			e.policy("p", func(s *v1alpha1.RemediationPolicySpec) { s.DryRun = true })
			node := e.addNodes("gpu", 1)[0]
			switch tc.annotation {
			case "":
				e.reportFaults(node, tc.faults...)
			case "-":
			default:
				e.annotate(node, v1alpha1.AnnotationGPUFaults, tc.annotation)
			}
			e.breakGPU(node, "reset-gpu")
			e.step(2 * time.Minute)
			nr := e.only(node)
			decided := nr.Status.Phases[0].Message
			if nr.Status.Action != tc.want || !contains(decided, tc.msg) {
				t.Errorf("action %s, decision %q: want %s saying %q", nr.Status.Action, decided, tc.want, tc.msg)
			}
			if got := len(e.events.find(node, v1alpha1.EventReasonBadGPUFaults)); got != map[bool]int{true: 1}[tc.badEvent] {
				t.Errorf("%d BadGPUFaults events, want one only for a bad report", got)
			}
			if (nr.Status.GPUReset != nil) != (tc.want == v1alpha1.ActionResetGPU) {
				t.Errorf("gpuReset %+v for action %s", nr.Status.GPUReset, nr.Status.Action)
			}
		})
	}
}

// TestGPUResetDryRunPlan: a dry run says which GPU it would reset after
// evicting which pods, or why it would drain the node.
func TestGPUResetDryRunPlan(t *testing.T) {
	for _, tc := range []struct {
		fault v1alpha1.GPUFault
		want  string
	}{
		{exclusiveFault("default/train-a", "default/train-b"), "would reset GPU 3 (" + gpu3.UUID + ") after evicting pods default/train-a, default/train-b, without cordoning"},
		{func() v1alpha1.GPUFault { f := exclusiveFault(); f.Sharing = v1alpha1.GPUSharingMIG; return f }(), "drain it whole (the whole node is drained: GPU 3 is shared (MIG)"},
	} {
		e := newClockEnv(t)
		e.policy("p", func(s *v1alpha1.RemediationPolicySpec) { s.DryRun = true })
		node := e.addNodes("gpu", 1)[0]
		e.runPod("default", "train-a", node, nil)
		e.runPod("default", "train-b", node, nil)
		e.runPod("default", "other", node, nil)
		e.reportFaults(node, tc.fault)
		e.breakGPU(node, "reset-gpu")
		e.step(2 * time.Minute)
		nr := e.only(node)
		var plan string
		for _, c := range nr.Status.Conditions {
			if c.Type == v1alpha1.ConditionDryRun {
				plan = c.Message
			}
		}
		if !contains(plan, tc.want) || !e.podExists("default", "train-a") {
			t.Errorf("dry-run plan %q, want it to say %q and evict nothing", plan, tc.want)
		}
	}
}

// TestIncidentsCarryTheirNodeLabel: the agent selects its node's incidents
// by gpuheal.io/node; a name too long for a label is cut as NodeLabelValue
// says.
func TestIncidentsCarryTheirNodeLabel(t *testing.T) {
	e := newClockEnv(t)
	e.policy("p", func(s *v1alpha1.RemediationPolicySpec) { s.DryRun = true })
	short := e.addNodes("gpu", 1)[0]
	long := e.addNodes(strings.Repeat("ip-10-0-0-1.", 6)+"ec2.internal", 1)[0]
	for _, n := range []string{short, long} {
		e.breakGPU(n, "reboot")
	}
	e.step(2 * time.Minute)
	for _, n := range []string{short, long} {
		nr := e.only(n)
		if got := nr.Labels[v1alpha1.LabelNode]; got != v1alpha1.NodeLabelValue(n) || len(got) > 63 {
			t.Errorf("incident of %s: label %s=%q, want %q", n, v1alpha1.LabelNode, got, v1alpha1.NodeLabelValue(n))
		}
	}
	if v1alpha1.NodeLabelValue(short) != short {
		t.Errorf("a short name is cut")
	}
}

// TestGPUResetTaintsTheDRADevice: where a DRA driver publishes the node's
// GPUs, the GPU to reset is tainted (NoSchedule, exactly its device)
// before its pods are evicted, and the rule goes when the incident ends.
func TestGPUResetTaintsTheDRADevice(t *testing.T) {
	e := newClockEnv(t)
	e.policy("p")
	node := e.addNodes("gpu", 1)[0]
	slice := &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: node + "-gpus"},
		Spec: resourcev1.ResourceSliceSpec{Driver: "gpu.nvidia.com", NodeName: &node,
			Pool: resourcev1.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1}}}
	for i, uuid := range []string{"GPU-00000000-0000-0000-0000-000000000002", gpu3.UUID} {
		slice.Spec.Devices = append(slice.Spec.Devices, resourcev1.Device{Name: fmt.Sprintf("gpu-%d", i+2),
			Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{deviceAttributeUUID: {StringValue: &uuid}}})
	}
	e.create(slice)
	e.runPod("default", "train-a", node, nil)
	e.reportFaults(node, exclusiveFault("default/train-a"))
	e.breakGPU(node, "reset-gpu")
	e.step(2 * time.Minute)
	nr := e.only(node)
	var rules resourcev1.DeviceTaintRuleList
	if err := e.c.List(e.ctx, &rules); err != nil {
		t.Fatal(err)
	}
	if len(rules.Items) != 1 || *rules.Items[0].Spec.DeviceSelector.Device != "gpu-3" || rules.Items[0].Spec.Taint.Effect != resourcev1.DeviceTaintEffectNoSchedule {
		t.Fatalf("device taint rules %+v while %s, want NoSchedule on gpu-3 alone", rules.Items, nr.Status.Phase)
	}
	e.answerReset(node, e.succeeded(nr))
	e.reportFaults(node)
	e.healGPU(node)
	e.settle()
	e.step(time.Minute)
	if nr := e.only(node); nr.Status.Phase != v1alpha1.PhaseSucceeded {
		t.Fatalf("phase %s (%s), want Succeeded", nr.Status.Phase, nr.Status.Message)
	}
	if err := e.c.List(e.ctx, &rules); err != nil || len(rules.Items) != 0 {
		t.Errorf("%d device taint rules left after the incident (%v)", len(rules.Items), err)
	}
}

// TestGPUResetClosedWhenTheIncidentEnds: a node that recovers while its
// reset is requested and unanswered ends the incident Cancelled, and the
// request gets an outcome, so an agent that has not taken it never will.
func TestGPUResetClosedWhenTheIncidentEnds(t *testing.T) {
	e, node := resetScene(t, nil, exclusiveFault("default/train-a"))
	e.reportFaults(node)
	e.healGPU(node)
	e.step(time.Minute) // the recovery hold, within the 3m timeout
	nr := e.only(node)
	g := nr.Status.GPUReset
	if nr.Status.Phase != v1alpha1.PhaseCancelled || nr.Status.Reason != v1alpha1.ReasonRecovered {
		t.Fatalf("phase %s reason %s (%s), want Cancelled Recovered", nr.Status.Phase, nr.Status.Reason, nr.Status.Message)
	}
	if g.Outcome != v1alpha1.GPUResetFailed || g.Reason != v1alpha1.ResetReasonRefused || !contains(g.Message, "before the agent answered") {
		t.Errorf("gpuReset %+v: want the request closed", g)
	}
	if calls := e.prov.CallsTo(fake.MethodReboot); len(calls) != 0 {
		t.Errorf("reboot calls %+v, want none", calls)
	}
}

// TestGPUResetLostAnswerThenRestart: the write of each phase of a reset
// lands but its answer is lost, and the controller process dies; the new
// one resumes from the status alone: one request, one ID, no reboot.
func TestGPUResetLostAnswerThenRestart(t *testing.T) {
	for _, phase := range []v1alpha1.Phase{v1alpha1.PhaseDraining, v1alpha1.PhaseDrained, v1alpha1.PhaseResetting, v1alpha1.PhaseVerifying} {
		t.Run(string(phase), func(t *testing.T) {
			lost := false
			e := newClockEnv(t, interceptor.Funcs{
				SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
					if err := c.SubResource(sub).Update(ctx, obj, opts...); err != nil {
						return err
					}
					if nr, ok := obj.(*v1alpha1.NodeRemediation); ok && nr.Status.Phase == phase && !lost {
						lost = true
						return errors.New("http2: client connection lost")
					}
					return nil
				},
			})
			e.crashes = 1
			e.policy("p")
			node := e.addNodes("gpu", 1)[0]
			e.runPod("default", "train-a", node, nil)
			e.runPod("default", "other", node, nil)
			e.reportFaults(node, exclusiveFault("default/train-a"))
			e.breakGPU(node, "reset-gpu")
			e.step(2 * time.Minute)
			nr := e.only(node)
			if nr.Status.Phase != v1alpha1.PhaseResetting {
				t.Fatalf("phase %s (%s), want Resetting", nr.Status.Phase, nr.Status.Message)
			}
			e.answerReset(node, e.succeeded(nr))
			e.reportFaults(node)
			e.healGPU(node)
			e.settle()
			e.step(time.Minute)
			if !lost || e.crashes != 0 {
				t.Fatalf("the answer of the %s write was never lost (lost %v, crashes left %d)", phase, lost, e.crashes)
			}
			nr = e.only(node)
			if nr.Status.Phase != v1alpha1.PhaseSucceeded || nr.Status.Attempts != 1 || nr.Status.GPUReset.RequestID != nr.Name+"-reset-1" {
				t.Fatalf("phase %s (%s), attempt %d, request %s: want Succeeded after one request", nr.Status.Phase, nr.Status.Message, nr.Status.Attempts, nr.Status.GPUReset.RequestID)
			}
			recs := e.audit.Records()
			if n := countKind(recs, audit.ResetRequested); n != 1 || countKind(recs, audit.DrainScoped) != 1 || countKind(recs, audit.ResetFinished) != 1 || len(e.prov.CallsTo(fake.MethodReboot)) != 0 || !e.podExists("default", "other") {
				t.Errorf("%d ResetRequested and %d ResetFinished records, %d reboots, pod other kept %v: want one request and answer, no reboot, other left running",
					n, countKind(recs, audit.ResetFinished), len(e.prov.CallsTo(fake.MethodReboot)), e.podExists("default", "other"))
			}
		})
	}
}

// TestGPUResetRestartsTheDevicePlugin: NVIDIA's device plugin never
// advertises a GPU it marked unhealthy again, so after a verified reset of
// a node whose allocatable is short, the controller deletes the plugin's
// DaemonSet pod on that node, and no other pod; with another GPU still
// faulty it leaves the plugin alone.
func TestGPUResetRestartsTheDevicePlugin(t *testing.T) {
	for _, otherFaulty := range []bool{false, true} {
		e, node := resetScene(t, nil, exclusiveFault("default/train-a"))
		sels, err := ParseDevicePluginSelectors(DefaultDevicePluginSelectors)
		if err != nil {
			t.Fatal(err)
		}
		e.opts.DevicePlugins = sels
		e.restart()
		yes := true
		for _, name := range []string{"nvidia-device-plugin-abcde", "dcgm-exporter-abcde"} {
			app := map[string]string{"nvidia-device-plugin-abcde": "nvidia-device-plugin-daemonset", "dcgm-exporter-abcde": "nvidia-dcgm-exporter"}[name]
			e.create(&corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: "gpu-operator", Name: name, Labels: map[string]string{"app": app},
					OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: app, UID: "ds-" + types.UID(app), Controller: &yes}}},
				Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "main", Image: "plugin"}}},
			})
		}
		// The plugin took the faulty GPU out of the node's allocatable.
		n, _ := e.node(node)
		n.Status.Capacity = corev1.ResourceList{v1alpha1.ResourceNvidiaGPU: resource.MustParse("8")}
		n.Status.Allocatable = corev1.ResourceList{v1alpha1.ResourceNvidiaGPU: resource.MustParse("7")}
		if err := e.c.Status().Update(e.ctx, n); err != nil {
			t.Fatal(err)
		}
		nr := e.only(node)
		e.step(time.Second)
		e.answerReset(node, e.succeeded(nr))
		if otherFaulty {
			other := exclusiveFault()
			other.Index, other.UUID, other.BusID = 5, "GPU-55555555", "00000000:9A:00.0"
			e.reportFaults(node, other)
		} else {
			e.reportFaults(node)
		}
		e.healGPU(node)
		e.step(time.Minute)
		nr = e.only(node)
		if nr.Status.Phase != v1alpha1.PhaseSucceeded {
			t.Fatalf("otherFaulty=%v: phase %s (%s), want Succeeded", otherFaulty, nr.Status.Phase, nr.Status.Message)
		}
		if got := e.podExists("gpu-operator", "nvidia-device-plugin-abcde"); got != otherFaulty {
			t.Errorf("otherFaulty=%v: device plugin pod exists = %v, want %v", otherFaulty, got, otherFaulty)
		}
		if !e.podExists("gpu-operator", "dcgm-exporter-abcde") {
			t.Errorf("otherFaulty=%v: the DCGM exporter pod was deleted", otherFaulty)
		}
		if restarted := contains(nr.Status.Message, "restarted the device plugin"); restarted == otherFaulty {
			t.Errorf("otherFaulty=%v: message %q", otherFaulty, nr.Status.Message)
		}
	}
}

// TestGPUResetOutgrownBySecondFault: while the reset is waited on, the
// agent's report names another GPU that needs a reboot (or one that needs
// a replacement): the reset cannot repair the node, so the incident
// cordons, drains and reboots (replaces) at once, not after the timeout.
func TestGPUResetOutgrownBySecondFault(t *testing.T) {
	for _, tc := range []struct {
		action string
		want   v1alpha1.Action
		method string
	}{
		{"reboot", v1alpha1.ActionReboot, fake.MethodReboot},
		{"replace", v1alpha1.ActionReplace, fake.MethodReplace},
	} {
		t.Run(tc.action, func(t *testing.T) {
			e, node := resetScene(t, nil, exclusiveFault("default/train-a"))
			second := exclusiveFault()
			second.Index, second.UUID, second.BusID, second.Reason, second.Action = 5, "GPU-55555555", "00000000:9A:00.0", "XID79", tc.action
			e.step(5 * time.Second)
			e.reportFaults(node, exclusiveFault("default/train-a"), second)
			e.settle()
			nr := e.only(node)
			if nr.Status.Action != tc.want {
				t.Fatalf("action %s phase %s (%s), want %s at once", nr.Status.Action, nr.Status.Phase, nr.Status.Message, tc.want)
			}
			if n, _ := e.node(node); !cordoned(n) {
				t.Errorf("node not cordoned before the %s", tc.action)
			}
			if calls := e.prov.CallsTo(tc.method); len(calls) != 1 {
				t.Errorf("%s calls %+v, want one", tc.method, calls)
			}
			if !contains(nr.Status.Message+phaseMessages(nr), "GPU 5") {
				t.Errorf("no phase says why (GPU 5): %s", phaseMessages(nr))
			}
		})
	}
}

func phaseMessages(nr v1alpha1.NodeRemediation) string {
	var b strings.Builder
	for _, p := range nr.Status.Phases {
		b.WriteString(string(p.Phase) + ": " + p.Message + "\n")
	}
	return b.String()
}
