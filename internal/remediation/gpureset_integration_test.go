//go:build integration

package remediation

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/audit"
	"github.com/gpuheal/gpuheal/internal/poll"
)

// TestGPUResetOnTheAPIServer: the whole single-GPU reset through the real
// API server, its watches, its Eviction API and the CRD's defaults. A
// goroutine plays the node's agent as the real one does: it finds its
// node's incidents by label gpuheal.io/node, takes the request that has
// requestedAt and no outcome, and answers on its Node, first Running,
// then Succeeded, then reports the GPU healthy. The pod holding the faulty
// GPU is evicted; an unrelated pod whose PodDisruptionBudget allows no
// disruption does not hold the repair, because it is not evicted at all,
// and the node is never cordoned.
func TestGPUResetOnTheAPIServer(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "reset", 1)
	node := h.nodes[0]
	pol := fastPolicy("reset")
	pol.Spec.GPUReset.Timeout = &metav1.Duration{Duration: time.Minute}
	h.create(pol)
	log := audit.NewMemory()
	h.startController(controllerConfig{audit: log})

	h.runPod("default", "train-0", node, map[string]string{"app": "train"})
	h.runPod("default", "serve-0", node, map[string]string{"app": "serve"}, readyByTest)
	h.markPodReady("default", "serve-0")
	h.blockingPDB("default", "serve", map[string]string{"app": "serve"})

	faults, _ := json.Marshal(v1alpha1.GPUFaultReport{Time: metav1.Now(), GPUs: []v1alpha1.GPUFault{{
		GPURef: v1alpha1.GPURef{Index: 3, UUID: "GPU-5a3f2e1b-8c4d-4e6f-9a0b-1c2d3e4f5a6b", BusID: "00000000:3B:00.0"},
		Reason: "DBE", Action: "reset-gpu", Pods: []string{"default/train-0"}, Sharing: v1alpha1.GPUSharingExclusive}}})
	h.annotateNode(node, map[string]any{v1alpha1.AnnotationGPUFaults: string(faults)})

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	agent := make(chan error, 1)
	go func() { agent <- h.playResetAgent(ctx, node) }()

	h.breakGPU(node, "reset-gpu")
	if err := <-agent; err != nil {
		t.Fatalf("the agent: %v", err)
	}
	h.setCondition(node, gpuCondition, corev1.ConditionTrue, "GPUsHealthy", "all 8 GPUs healthy")
	nr := h.waitPhase(node, v1alpha1.PhaseSucceeded, time.Minute)
	if nr.Status.Reason != v1alpha1.ReasonGPUReset || nr.Status.Action != v1alpha1.ActionResetGPU {
		t.Errorf("ended %s (%s) with action %s, want GPUReset by ResetGPU", nr.Status.Reason, nr.Status.Message, nr.Status.Action)
	}
	want := []v1alpha1.Phase{v1alpha1.PhasePending, v1alpha1.PhaseDraining, v1alpha1.PhaseDrained, v1alpha1.PhaseResetting,
		v1alpha1.PhaseVerifying, v1alpha1.PhaseSucceeded}
	if got := phasesOf(nr); !slices.Equal(got, want) {
		t.Errorf("phases %v, want %v", got, want)
	}
	g := nr.Status.GPUReset
	if g == nil || !g.PartialDrain || g.Outcome != v1alpha1.GPUResetSucceeded || g.RequestID != nr.Name+"-reset-1" || len(g.Steps) != 2 {
		t.Errorf("status.gpuReset %+v: want a partial drain, Succeeded with the agent's 2 steps", g)
	}
	if !slices.Equal(nr.Status.EvictedPods, []string{"default/train-0"}) {
		t.Errorf("evicted %v, want only default/train-0", nr.Status.EvictedPods)
	}
	var serve corev1.Pod
	if err := h.c.Get(context.Background(), types.NamespacedName{Namespace: "default", Name: "serve-0"}, &serve); err != nil || serve.DeletionTimestamp != nil {
		t.Errorf("pod serve-0 (not on the faulty GPU) was disturbed: %v", err)
	}
	if n, _ := h.node(node); n.Spec.Unschedulable || hasTaint(n) {
		t.Errorf("node cordoned (%v, taints %v) for a partial drain", n.Spec.Unschedulable, n.Spec.Taints)
	}
	if nr.Labels[v1alpha1.LabelNode] != node {
		t.Errorf("label %s=%q, want %q", v1alpha1.LabelNode, nr.Labels[v1alpha1.LabelNode], node)
	}
	var kinds []audit.Kind
	for _, r := range log.Records() {
		if r.Incident == nr.Name {
			kinds = append(kinds, r.Kind)
		}
	}
	for _, k := range []audit.Kind{audit.DrainScoped, audit.Evicted, audit.ResetRequested, audit.ResetFinished, audit.Recovered, audit.Succeeded} {
		if !slices.Contains(kinds, k) {
			t.Errorf("audit kinds %v lack %s", kinds, k)
		}
	}
	if slices.Contains(kinds, audit.EvictionBlocked) || slices.Contains(kinds, audit.Cordoned) {
		t.Errorf("audit kinds %v: nothing was blocked or cordoned", kinds)
	}
}

// playResetAgent is the node's agent for one request: it answers the
// first request of its node's incidents and drops the GPU from its fault
// report.
func (h *harness) playResetAgent(ctx context.Context, node string) error {
	var req v1alpha1.NodeRemediation
	err := poll.Until(ctx, "a reset request for node "+node, 100*time.Millisecond, func(ctx context.Context) (bool, error) {
		var list v1alpha1.NodeRemediationList
		if err := h.c.List(ctx, &list, client.MatchingLabels{v1alpha1.LabelNode: v1alpha1.NodeLabelValue(node)}); err != nil {
			return false, err
		}
		for _, nr := range list.Items {
			if g := nr.Status.GPUReset; g != nil && g.RequestedAt != nil && g.Outcome == "" {
				req = nr
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return err
	}
	g := req.Status.GPUReset
	started := metav1.Now()
	answer := func(rep v1alpha1.GPUResetReport) error {
		b, err := json.Marshal(rep)
		if err != nil {
			return err
		}
		return h.patchAnnotations(ctx, node, map[string]any{v1alpha1.AnnotationGPUReset: string(b)})
	}
	rep := v1alpha1.GPUResetReport{RequestID: g.RequestID, GPUs: g.GPUs, Outcome: v1alpha1.GPUResetRunning, StartedAt: started}
	if err := answer(rep); err != nil {
		return fmt.Errorf("answering Running: %w", err)
	}
	done := metav1.Now()
	rep.Outcome, rep.FinishedAt = v1alpha1.GPUResetSucceeded, &done
	rep.Steps = []v1alpha1.GPUResetStep{{Name: "reset", OK: true, Time: metav1.NowMicro()}, {Name: "verify", OK: true, Time: metav1.NowMicro()}}
	if err := answer(rep); err != nil {
		return fmt.Errorf("answering Succeeded: %w", err)
	}
	// The fault is gone: the report drops the GPU (the test then heals
	// the condition).
	return h.patchAnnotations(ctx, node, map[string]any{v1alpha1.AnnotationGPUFaults: nil})
}

func (h *harness) annotateNode(node string, annotations map[string]any) {
	h.t.Helper()
	if err := h.patchAnnotations(context.Background(), node, annotations); err != nil {
		h.t.Fatal(err)
	}
}

// patchAnnotations merges annotations into the node (nil deletes one), as
// the agent's metadata patch does.
func (h *harness) patchAnnotations(ctx context.Context, node string, annotations map[string]any) error {
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": annotations}})
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}
	if err := h.c.Patch(ctx, n, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("annotating node %s: %w", node, err)
	}
	return nil
}
