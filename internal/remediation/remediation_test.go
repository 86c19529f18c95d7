//go:build integration

package remediation

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/audit"
	"github.com/gpuheal/gpuheal/internal/testenv"
)

// TestLifecycle drives incidents through the real API server, its watches
// and kwok: a replacement with a drain, a reboot that heals, a drain that a
// PodDisruptionBudget holds (the Eviction API refuses) while the node
// recovers, and health scores rebuilt after a restart. Timeouts and
// escalations are tested on a fake clock (clockenv_test.go).
func TestLifecycle(t *testing.T) { //nolint:tparallel // the subtests share one controller and run in order
	t.Parallel()
	h := newHarness(t, "life", 3)
	h.create(fastPolicy("life"))
	log := audit.NewMemory()
	stop := h.startController(controllerConfig{audit: log})

	t.Run("replace drains and replaces", func(t *testing.T) {
		h := h.sub(t)
		node := h.nodes[0]
		h.runPod("default", "trainer-0", node, nil)
		h.runPod("default", "dcgm-exporter-0", node, nil, func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "dcgm-exporter",
				UID: "0b8c3d4e-0000-4000-8000-000000000001", Controller: ptr.To(true)}}
		})
		h.breakGPU(node, "replace")
		nr := h.waitPhase(node, v1alpha1.PhaseSucceeded, time.Minute)
		want := []v1alpha1.Phase{v1alpha1.PhasePending, v1alpha1.PhaseCordoned, v1alpha1.PhaseDraining,
			v1alpha1.PhaseDrained, v1alpha1.PhaseReplacing, v1alpha1.PhaseVerifying, v1alpha1.PhaseSucceeded}
		if got := phasesOf(nr); !slices.Equal(got, want) {
			t.Errorf("phases %v, want %v", got, want)
		}
		if nr.Status.Action != v1alpha1.ActionReplace {
			t.Errorf("action %s, want Replace", nr.Status.Action)
		}
		if !slices.Equal(nr.Status.EvictedPods, []string{"default/trainer-0"}) {
			t.Errorf("evicted %v, want only default/trainer-0 (DaemonSet pods stay)", nr.Status.EvictedPods)
		}
		if len(nr.Status.ProviderRequests) != 1 || nr.Status.ProviderRequests[0].Error != "" {
			t.Errorf("provider requests %+v, want one successful", nr.Status.ProviderRequests)
		}
		if _, exists := h.node(node); exists {
			t.Errorf("node %s still exists after replacement", node)
		}
		repl := h.replacementsOf(node)
		if len(repl) != 1 || nr.Status.Replacement != repl[0] {
			t.Fatalf("replacements %v, status says %q", repl, nr.Status.Replacement)
		}
		if n, ok := h.node(repl[0]); !ok || !testenv.NodeReady(n) {
			t.Errorf("replacement %s not Ready", repl[0])
		}
		recs, err := log.Query(t.Context(), audit.Filter{Incident: nr.Name})
		if err != nil {
			t.Fatal(err)
		}
		var kinds []audit.Kind
		for _, r := range recs {
			kinds = append(kinds, r.Kind)
		}
		wantKinds := []audit.Kind{audit.Detected, audit.Decided, audit.Cordoned, audit.Evicted, audit.Drained,
			audit.ActionRequested, audit.Recovered, audit.Succeeded}
		if !slices.Equal(kinds, wantKinds) {
			t.Errorf("audit records %v, want %v", kinds, wantKinds)
		}
		if len(recs) == len(wantKinds) && (recs[3].Pod != "default/trainer-0" || recs[5].RequestID == "" || recs[7].Duration <= 0) {
			t.Errorf("records lack detail: evicted %q, request id %q, duration %v", recs[3].Pod, recs[5].RequestID, recs[7].Duration)
		}
		if rep, err := log.Verify(t.Context()); err != nil || !rep.OK {
			t.Errorf("audit chain: %v %v", rep, err)
		}
	})

	t.Run("reboot heals and uncordons", func(t *testing.T) {
		h := h.sub(t)
		node := h.nodes[1]
		h.breakGPU(node, "reboot")
		h.waitFor("node cordoned", 30*time.Second, func() (bool, error) {
			n, _ := h.node(node)
			return n != nil && n.Spec.Unschedulable && hasTaint(n), nil
		})
		nr := h.waitPhase(node, v1alpha1.PhaseSucceeded, time.Minute)
		if nr.Status.Action != v1alpha1.ActionReboot || nr.Status.Reason != "Recovered" {
			t.Errorf("action %s reason %s, want Reboot/Recovered", nr.Status.Action, nr.Status.Reason)
		}
		n, _ := h.node(node)
		if n.Spec.Unschedulable || hasTaint(n) || n.Annotations[v1alpha1.AnnotationCordonedBy] != "" {
			t.Errorf("node still cordoned after a healing reboot: unschedulable=%v taints=%v annotations=%v",
				n.Spec.Unschedulable, n.Spec.Taints, n.Annotations)
		}
	})

	t.Run("a PDB holds the drain and a node that recovers meanwhile is uncordoned", func(t *testing.T) {
		h := h.sub(t)
		node := h.nodes[2]
		h.runPod("default", "critical-0", node, map[string]string{"app": "critical"}, readyByTest)
		h.blockingPDB("default", "critical", map[string]string{"app": "critical"})
		h.markPodReady("default", "critical-0")
		h.breakGPU(node, "reboot")
		h.waitFor("drain blocked by the PDB", 30*time.Second, func() (bool, error) {
			items := h.incidents(node)
			return len(items) == 1 && meta.IsStatusConditionTrue(items[0].Status.Conditions, v1alpha1.ConditionDrainBlocked), nil
		})
		h.setCondition(node, gpuCondition, corev1.ConditionTrue, "GPUsHealthy", "all 8 GPUs healthy")
		nr := h.waitPhase(node, v1alpha1.PhaseCancelled, 30*time.Second)
		if nr.Status.Reason != "Recovered" || len(nr.Status.ProviderRequests) != 0 {
			t.Errorf("reason %s, provider requests %v: want Recovered and none", nr.Status.Reason, nr.Status.ProviderRequests)
		}
		n, _ := h.node(node)
		if n.Spec.Unschedulable || hasTaint(n) {
			t.Errorf("node still cordoned after recovering")
		}
		var pod corev1.Pod
		if err := h.c.Get(t.Context(), types.NamespacedName{Namespace: "default", Name: "critical-0"}, &pod); err != nil || pod.DeletionTimestamp != nil {
			t.Errorf("the PDB-protected pod was removed (err %v)", err)
		}
	})

	t.Run("health scores published and rebuilt from the audit log after a restart", func(t *testing.T) {
		h := h.sub(t)
		rebooted, untouched := h.nodes[1], h.addNodes("life-new", 1)[0]
		want := map[string][2]string{rebooted: {"81.9", "silver"}, untouched: {"100.0", "gold"}}
		waitScores := func() {
			h.waitFor("health scores", 30*time.Second, func() (bool, error) {
				for node, w := range want {
					n, _ := h.node(node)
					if n == nil || n.Annotations[v1alpha1.AnnotationHealthScore] != w[0] || n.Labels[v1alpha1.LabelHealthTier] != w[1] {
						return false, fmt.Errorf("%s: score %q tier %q, want %v", node, n.Annotations[v1alpha1.AnnotationHealthScore], n.Labels[v1alpha1.LabelHealthTier], w)
					}
				}
				return true, nil
			})
		}
		waitScores()
		n, _ := h.node(rebooted)
		if !strings.Contains(n.Annotations[v1alpha1.AnnotationGPUHealthScores], "GPU-") {
			t.Errorf("per-GPU scores %q, want the GPU the agent named", n.Annotations[v1alpha1.AnnotationGPUHealthScores])
		}
		stop()
		delete(n.Annotations, v1alpha1.AnnotationHealthScore)
		delete(n.Labels, v1alpha1.LabelHealthTier)
		if err := h.c.Update(t.Context(), n); err != nil {
			t.Fatal(err)
		}
		h.startController(controllerConfig{audit: log, history: log})
		waitScores()
	})
}
