//go:build integration

package remediation

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/score/tieraffinity"
)

// TestReleaseHandsNodesBack is what `helm uninstall` runs: on a real API
// server, the controller is scaled to zero, open incidents end Cancelled,
// and only gpuheal's own cordons and taints are undone, the health tier's
// bronze taint included.
func TestReleaseHandsNodesBack(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "release-", 4)
	ctx := context.Background()
	ours, oursOverTheirs, theirs, taintOnly := h.nodes[0], h.nodes[1], h.nodes[2], h.nodes[3]
	taint := corev1.Taint{Key: v1alpha1.TaintUnhealthy, Effect: corev1.TaintEffectNoSchedule}
	h.editNode(ours, func(n *corev1.Node) {
		n.Spec.Unschedulable = true
		n.Spec.Taints = append(n.Spec.Taints, taint)
		n.Annotations = map[string]string{v1alpha1.AnnotationCordonedBy: "nr-ours"}
		n.Spec.Taints = append(n.Spec.Taints, tieraffinity.BronzeTaint())
	})
	h.editNode(oursOverTheirs, func(n *corev1.Node) {
		n.Spec.Unschedulable = true
		n.Spec.Taints = append(n.Spec.Taints, taint)
		n.Annotations = map[string]string{v1alpha1.AnnotationCordonedBy: "nr-over", v1alpha1.AnnotationWasUnschedulable: "true"}
	})
	h.editNode(theirs, func(n *corev1.Node) {
		n.Spec.Unschedulable = true
		n.Spec.Taints = append(n.Spec.Taints, tieraffinity.BronzeTaint())
	})
	h.editNode(taintOnly, func(n *corev1.Node) {
		n.Spec.Unschedulable = true
		n.Spec.Taints = append(n.Spec.Taints, taint)
	})

	incident := func(name, node string) *v1alpha1.NodeRemediation {
		return &v1alpha1.NodeRemediation{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.NodeRemediationSpec{
			NodeName: node, PolicyName: "default",
			Trigger: v1alpha1.Trigger{Type: gpuCondition, Status: metav1.ConditionFalse, Since: metav1.Now()},
		}}
	}
	open, done := incident("nr-ours", ours), incident("nr-done", theirs)
	for nr, phase := range map[*v1alpha1.NodeRemediation]v1alpha1.Phase{open: v1alpha1.PhaseDraining, done: v1alpha1.PhaseSucceeded} {
		h.create(nr)
		nr.Status.Phase = phase
		if err := h.c.Status().Update(ctx, nr); err != nil {
			t.Fatalf("setting phase of %s: %v", nr.Name, err)
		}
	}
	two := int32(2)
	labels := map[string]string{"app": "gpuheal-controller"}
	ctrlDeploy := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "gpuheal-controller", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &two,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "gpuheal-controller"}}},
			},
		},
	}
	h.create(ctrlDeploy)

	err := Release(ctx, h.c, ReleaseOptions{
		Controller: types.NamespacedName{Namespace: "default", Name: "gpuheal-controller"},
		Timeout:    30 * time.Second, Poll: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatalf("Release: %v", err)
	}

	if err := h.c.Get(ctx, client.ObjectKeyFromObject(ctrlDeploy), ctrlDeploy); err != nil {
		t.Fatal(err)
	}
	if r := ctrlDeploy.Spec.Replicas; r == nil || *r != 0 {
		t.Errorf("controller replicas = %v, want 0", r)
	}
	want := map[string]bool{ours: false, oursOverTheirs: true, theirs: true, taintOnly: true} // unschedulable after
	for name, unschedulable := range want {
		n, _ := h.node(name)
		if n.Spec.Unschedulable != unschedulable {
			t.Errorf("node %s unschedulable = %v, want %v", name, n.Spec.Unschedulable, unschedulable)
		}
		if hasTaint(n) {
			t.Errorf("node %s still has taint %s", name, v1alpha1.TaintUnhealthy)
		}
		if slices.ContainsFunc(n.Spec.Taints, tieraffinity.IsBronzeTaint) {
			t.Errorf("node %s still has the health tier taint", name)
		}
		if v, ok := n.Annotations[v1alpha1.AnnotationCordonedBy]; ok {
			t.Errorf("node %s still has %s=%s", name, v1alpha1.AnnotationCordonedBy, v)
		}
		if _, ok := n.Annotations[v1alpha1.AnnotationWasUnschedulable]; ok {
			t.Errorf("node %s still has %s", name, v1alpha1.AnnotationWasUnschedulable)
		}
	}
	for name, phase := range map[string]v1alpha1.Phase{"nr-ours": v1alpha1.PhaseCancelled, "nr-done": v1alpha1.PhaseSucceeded} {
		var nr v1alpha1.NodeRemediation
		if err := h.c.Get(ctx, clientKey(name), &nr); err != nil {
			t.Fatal(err)
		}
		if nr.Status.Phase != phase {
			t.Errorf("NodeRemediation %s phase = %s, want %s", name, nr.Status.Phase, phase)
		}
		if len(nr.Finalizers) != 0 {
			t.Errorf("NodeRemediation %s has finalizers %v", name, nr.Finalizers)
		}
	}
}

// editNode updates a node's spec and metadata in place, again on a
// conflict: kwok writes the node's status meanwhile.
func (h *harness) editNode(name string, edit func(*corev1.Node)) {
	h.t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, ok := h.node(name)
		if !ok {
			return fmt.Errorf("node %s not found", name)
		}
		edit(n)
		return h.c.Update(context.Background(), n)
	})
	if err != nil {
		h.t.Fatalf("updating node %s: %v", name, err)
	}
}
