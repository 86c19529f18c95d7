//go:build integration

package remediation

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/audit"
	"github.com/gpuheal/gpuheal/internal/provider/karpenter"
)

// TestStandsDownBesideOtherRemediators: on a node another system is
// already repairing — Karpenter's disruption taint (v1 and before), its
// NodeClaim being deleted, a cordon gpuheal did not set (EKS node auto
// repair, a drain, a person) — the incident ends Cancelled with reason
// OtherRemediator, an Event on the Node and an audit record that say who,
// and gpuheal neither drains, taints nor uncordons the node.
func TestStandsDownBesideOtherRemediators(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "coex", 5)
	if _, err := envtest.InstallCRDs(h.env.Config, envtest.CRDInstallOptions{Paths: []string{"../provider/karpenter/testdata/crds"}}); err != nil {
		t.Fatal(err)
	}
	h.create(fastPolicy("coex"))
	mem := audit.NewMemory()
	h.startController(controllerConfig{kwok: kwokSlowBoot(), audit: mem})

	// The NodeClaim Karpenter is deleting: a finalizer holds it.
	claim := &unstructured.Unstructured{}
	claim.SetGroupVersionKind(karpenter.NodeClaimGVK)
	claim.SetName("claim-coex")
	claim.SetFinalizers([]string{"karpenter.sh/termination"})
	_ = unstructured.SetNestedField(claim.Object, map[string]any{
		"nodeClassRef": map[string]any{"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
		"requirements": []any{},
	}, "spec")
	h.create(claim)
	if err := h.c.Delete(t.Context(), claim); err != nil {
		t.Fatal(err)
	}

	marks := []struct {
		name, who string
		mark      func(*corev1.Node)
	}{
		{"karpenter-disrupted", "taint karpenter.sh/disrupted", func(n *corev1.Node) {
			n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: v1alpha1.TaintKarpenterDisrupted, Effect: corev1.TaintEffectNoSchedule})
		}},
		{"karpenter-disruption", "taint karpenter.sh/disruption", func(n *corev1.Node) {
			n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: v1alpha1.TaintKarpenterDisruption, Value: "disrupting", Effect: corev1.TaintEffectNoSchedule})
		}},
		{"nodeclaim-deleting", "NodeClaim claim-coex", func(n *corev1.Node) {
			n.OwnerReferences = append(n.OwnerReferences, metav1.OwnerReference{APIVersion: "karpenter.sh/v1", Kind: "NodeClaim",
				Name: "claim-coex", UID: claim.GetUID()})
		}},
		{"cordoned-by-someone", "someone else cordoned the node", func(n *corev1.Node) { n.Spec.Unschedulable = true }},
	}
	for i, m := range marks {
		node := h.nodes[i]
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			h := h.sub(t)
			h.editNode(node, m.mark)
			h.runPod("default", "work-"+node, node, map[string]string{"app": "train"})
			h.breakGPU(node, "replace")
			nr := h.waitPhase(node, v1alpha1.PhaseCancelled, 30*time.Second)
			if nr.Status.Reason != v1alpha1.ReasonOtherRemediator || !strings.Contains(nr.Status.Message, m.who) {
				t.Errorf("incident ended %s: %s; want %s naming %q", nr.Status.Reason, nr.Status.Message, v1alpha1.ReasonOtherRemediator, m.who)
			}
			if slices.Contains(phasesOf(nr), v1alpha1.PhaseCordoned) {
				t.Errorf("gpuheal cordoned before standing down: %v", phasesOf(nr))
			}
			n, _ := h.node(node)
			if hasTaint(n) || n.Annotations[v1alpha1.AnnotationCordonedBy] != "" {
				t.Errorf("gpuheal marked the node: taints %v, annotations %v", n.Spec.Taints, n.Annotations)
			}
			if m.name == "cordoned-by-someone" && !n.Spec.Unschedulable {
				t.Error("gpuheal lifted a cordon it did not set")
			}
			var pod corev1.Pod
			if err := h.c.Get(t.Context(), client.ObjectKey{Namespace: "default", Name: "work-" + node}, &pod); err != nil || pod.DeletionTimestamp != nil {
				t.Errorf("gpuheal evicted the node's pod (err %v)", err)
			}
			h.waitFor("the stand-down Event on the node and its audit record", 10*time.Second, func() (bool, error) {
				var evs eventsv1.EventList
				if err := h.c.List(context.Background(), &evs); err != nil {
					return false, err
				}
				ev := slices.ContainsFunc(evs.Items, func(ev eventsv1.Event) bool {
					return ev.Regarding.Name == node && ev.Reason == v1alpha1.EventReasonRemediationPrefix+string(v1alpha1.PhaseCancelled) &&
						strings.Contains(ev.Note, m.who)
				})
				rec := slices.ContainsFunc(mem.Records(), func(r audit.Record) bool {
					return r.Node == node && r.Reason == v1alpha1.ReasonOtherRemediator && strings.Contains(r.Message, m.who)
				})
				return ev && rec, nil
			})
		})
	}

	// Mid-incident: gpuheal has cordoned and is draining (a PDB blocks the
	// pod) when Karpenter starts disrupting the node. gpuheal stands down
	// and lifts its own cordon and taint only; Karpenter's taint stays.
	t.Run("karpenter-starts-mid-drain", func(t *testing.T) {
		t.Parallel()
		h := h.sub(t)
		node := h.nodes[4]
		labels := map[string]string{"app": "held-" + node}
		h.runPod("default", "held-"+node, node, labels, readyByTest)
		h.markPodReady("default", "held-"+node)
		h.blockingPDB("default", "held-"+node, labels)
		h.breakGPU(node, "replace")
		h.waitPhase(node, v1alpha1.PhaseDraining, 30*time.Second)
		h.editNode(node, func(n *corev1.Node) {
			n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: v1alpha1.TaintKarpenterDisrupted, Effect: corev1.TaintEffectNoSchedule})
		})
		nr := h.waitPhase(node, v1alpha1.PhaseCancelled, 30*time.Second)
		if nr.Status.Reason != v1alpha1.ReasonOtherRemediator {
			t.Errorf("incident ended %s: %s", nr.Status.Reason, nr.Status.Message)
		}
		n, _ := h.node(node)
		if hasTaint(n) || n.Spec.Unschedulable || n.Annotations[v1alpha1.AnnotationCordonedBy] != "" {
			t.Errorf("gpuheal's own cordon is still there: unschedulable %v, taints %v", n.Spec.Unschedulable, n.Spec.Taints)
		}
		if !slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == v1alpha1.TaintKarpenterDisrupted }) {
			t.Errorf("Karpenter's taint was removed: %v", n.Spec.Taints)
		}
	})
}
