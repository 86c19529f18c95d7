//go:build integration

package remediation

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/audit"
	"github.com/gpuheal/gpuheal/internal/testenv"
	"github.com/gpuheal/gpuheal/internal/testenv/testcluster"
)

// TestCheckpointThenEvictOnTheAPIServer: a training pod under
// CheckpointThenEvict, behind a PodDisruptionBudget, on the real API
// server. The controller writes the request on the pod and waits; the
// test answers as the workload would (checkpoint-done); the eviction that
// follows goes through the Eviction API, so the exhausted PDB refuses it
// until the budget allows one disruption, and then the pod leaves.
func TestCheckpointThenEvictOnTheAPIServer(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "ckpt", 1)
	node := h.nodes[0]
	pol := fastPolicy("ckpt")
	pol.Spec.Drain.Workloads = []v1alpha1.WorkloadDrain{{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "trainer"}},
		Mode:     v1alpha1.DrainCheckpointThenEvict, Grace: &metav1.Duration{Duration: 10 * time.Minute},
	}}
	h.create(pol)
	log := audit.NewMemory()
	h.startController(controllerConfig{audit: log})

	labels := map[string]string{"app": "trainer"}
	h.runPod("default", "trainer-0", node, labels, readyByTest)
	h.markPodReady("default", "trainer-0")
	h.blockingPDB("default", "trainer", labels)

	// A fatal fault whose GPU is still there (Xid 48): the wait is bounded
	// to 5m, longer than this test.
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
		v1alpha1.AnnotationRecommendedActions: adviceAnnotation("reboot")}}})
	if err := h.c.Patch(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}
	h.setCondition(node, gpuCondition, corev1.ConditionFalse, "NvidiaXID48Error", xidMessage)

	key := types.NamespacedName{Namespace: "default", Name: "trainer-0"}
	var requested string
	h.waitFor("the checkpoint request on the pod", time.Minute, func() (bool, error) {
		var p corev1.Pod
		if err := h.c.Get(context.Background(), key, &p); err != nil {
			return false, err
		}
		requested = p.Annotations[v1alpha1.AnnotationCheckpointRequestedAt]
		if requested == "" {
			return false, nil
		}
		if p.Annotations[v1alpha1.AnnotationCheckpointDeadline] == "" || p.Annotations[v1alpha1.AnnotationCheckpointReason] == "" {
			return false, fmt.Errorf("annotations %v: want the deadline and the reason too", p.Annotations)
		}
		return true, nil
	})
	h.waitFor("the drain waiting on the checkpoint", 30*time.Second, func() (bool, error) {
		nr := h.incidents(node)
		if len(nr) != 1 {
			return false, nil
		}
		c := meta.FindStatusCondition(nr[0].Status.Conditions, v1alpha1.ConditionDrainBlocked)
		return c != nil && c.Reason == v1alpha1.ReasonWorkloadWait, nil
	})
	h.waitFor("a CheckpointRequested Event on the pod", 30*time.Second, func() (bool, error) {
		var evs corev1.EventList
		if err := h.c.List(context.Background(), &evs, client.InNamespace("default")); err != nil {
			return false, err
		}
		for _, ev := range evs.Items {
			if ev.InvolvedObject.Name == "trainer-0" && ev.Reason == v1alpha1.EventReasonCheckpointRequested && ev.Type == corev1.EventTypeNormal {
				return true, nil
			}
		}
		return false, nil
	})
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var p corev1.Pod
		if err := h.c.Get(context.Background(), key, &p); err != nil {
			return err
		}
		if p.DeletionTimestamp != nil {
			return fmt.Errorf("pod evicted before it answered")
		}
		p.Annotations[v1alpha1.AnnotationCheckpointDone] = time.Now().UTC().Format(time.RFC3339)
		return h.c.Update(context.Background(), &p)
	}); err != nil {
		t.Fatal(err)
	}

	// The answer makes the controller evict, and the PDB refuses.
	h.waitFor("the eviction refused by the PDB", 30*time.Second, func() (bool, error) {
		nr := h.incidents(node)
		if len(nr) != 1 {
			return false, nil
		}
		c := meta.FindStatusCondition(nr[0].Status.Conditions, v1alpha1.ConditionDrainBlocked)
		w := findWait(&nr[0], "default/trainer-0")
		return c != nil && c.Reason == v1alpha1.ReasonEvictionRefused && w != nil && w.Outcome == v1alpha1.WaitCheckpointDone, nil
	})
	var pdb policyv1.PodDisruptionBudget
	if err := h.c.Get(context.Background(), types.NamespacedName{Namespace: "default", Name: "trainer"}, &pdb); err != nil {
		t.Fatal(err)
	}
	pdb.Status.DisruptionsAllowed = 1
	if err := h.c.Status().Update(context.Background(), &pdb); err != nil {
		t.Fatal(err)
	}
	h.waitFor("trainer-0 evicted", time.Minute, func() (bool, error) {
		nr := h.incidents(node)
		return len(nr) == 1 && slices.Contains(nr[0].Status.EvictedPods, "default/trainer-0"), nil
	})
	kinds := map[audit.Kind]int{}
	for _, r := range log.Records() {
		if r.Pod == "default/trainer-0" {
			kinds[r.Kind]++
		}
	}
	if kinds[audit.CheckpointRequested] != 1 || kinds[audit.WorkloadWaited] != 1 || kinds[audit.EvictionBlocked] < 1 || kinds[audit.Evicted] != 1 {
		t.Errorf("audit records of trainer-0 %v: want a request, the wait, a refusal and the eviction", kinds)
	}
}

// TestCRDValidationDrainWorkloads: the shipped CRD's CEL rules refuse a
// workload entry that selects nothing or lacks its mode's duration, and a
// duration that is not positive.
func TestCRDValidationDrainWorkloads(t *testing.T) {
	t.Parallel()
	env := testcluster.Start(t, testenv.Options{Scheme: testScheme(t)})
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "trainer"}}
	hour := &metav1.Duration{Duration: time.Hour}
	pol := func(name string, w v1alpha1.WorkloadDrain) *v1alpha1.RemediationPolicy {
		return &v1alpha1.RemediationPolicy{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: v1alpha1.RemediationPolicySpec{Drain: v1alpha1.DrainSpec{Workloads: []v1alpha1.WorkloadDrain{w}}}}
	}
	for _, tc := range []struct {
		name string
		w    v1alpha1.WorkloadDrain
		says string // "" : accepted
	}{
		{"good", v1alpha1.WorkloadDrain{Namespaces: []string{"train"}, Selector: sel, Mode: v1alpha1.DrainCheckpointThenEvict, Grace: hour}, ""},
		{"immediate", v1alpha1.WorkloadDrain{Namespaces: []string{"web"}, Mode: v1alpha1.DrainImmediate}, ""},
		{"no-pods", v1alpha1.WorkloadDrain{Mode: v1alpha1.DrainImmediate}, "set namespaces, selector or both"},
		{"no-maxwait", v1alpha1.WorkloadDrain{Selector: sel, Mode: v1alpha1.DrainAllowCompletion}, "AllowCompletion needs maxWait"},
		{"no-grace", v1alpha1.WorkloadDrain{Selector: sel, Mode: v1alpha1.DrainCheckpointThenEvict}, "CheckpointThenEvict needs grace"},
		{"no-timeout", v1alpha1.WorkloadDrain{Selector: sel, Mode: v1alpha1.DrainDeleteAfterTimeout}, "DeleteAfterTimeout needs timeout"},
		{"zero-grace", v1alpha1.WorkloadDrain{Selector: sel, Mode: v1alpha1.DrainCheckpointThenEvict, Grace: &metav1.Duration{}}, "must be a positive duration"},
		{"bad-mode", v1alpha1.WorkloadDrain{Selector: sel, Mode: "Later"}, "spec.drain.workloads[0].mode"},
	} {
		err := env.Client.Create(t.Context(), pol(tc.name, tc.w))
		if tc.says == "" && err != nil {
			t.Errorf("%s: refused: %v", tc.name, err)
		}
		if tc.says != "" && (err == nil || !strings.Contains(err.Error(), tc.says)) {
			t.Errorf("%s: error %v, want one saying %q", tc.name, err, tc.says)
		}
	}
}
