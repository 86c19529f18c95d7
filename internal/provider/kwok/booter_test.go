package kwok

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	fakeclient "sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/provider"
)

// The simulated cloud's boots on a fake clock and the fake client: a 30 s
// reboot takes no time. That kwok itself then marks the node Ready is
// TestKwok's, on a real API server with kwok (integration).
func TestBooterFinishesABootAtItsReadyTime(t *testing.T) {
	for _, persists := range []bool{false, true} {
		ctx := t.Context()
		fc := clocktesting.NewFakeClock(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: "gpu-0", Labels: map[string]string{},
				Annotations: map[string]string{v1alpha1.AnnotationKwokManaged: v1alpha1.KwokManagedValue}},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
				{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady"},
				{Type: gpuCondition, Status: corev1.ConditionFalse, Reason: "NvidiaXID79Error"},
			}},
		}
		if persists {
			node.Annotations[v1alpha1.AnnotationKwokFaultPersists] = "true"
		}
		c := fakeclient.NewClientBuilder().WithObjects(node).WithStatusSubresource(node).Build()
		opts := Options{RebootDelay: 30 * time.Second, Clock: fc}
		p, b := New(c, opts), NewBooter(c, opts)

		if id, err := p.Reboot(ctx, node, "inc-1"); err != nil || id != "kwok-reboot-inc-1" {
			t.Fatalf("Reboot = %q, %v", id, err)
		}
		n := get(t, c, "gpu-0")
		if !booting(n) || n.Annotations[v1alpha1.AnnotationKwokManaged] != "" || cond(n, corev1.NodeReady).Reason != v1alpha1.ReasonKwokRebooting {
			t.Fatalf("after Reboot: labels %v annotations %v Ready %+v; want booting, away from kwok, NotReady", n.Labels, n.Annotations, cond(n, corev1.NodeReady))
		}
		if st, err := p.Status(ctx, n); err != nil || st.State != provider.StateRebooting {
			t.Errorf("Status = %+v, %v; want Rebooting", st, err)
		}
		fc.Step(29 * time.Second)
		next, err := b.pass(ctx)
		if err != nil || !next.Equal(fc.Now().Add(time.Second)) || !booting(get(t, c, "gpu-0")) {
			t.Fatalf("a second early: next %v, err %v, booting %v; want still booting until the ready time", next, err, booting(get(t, c, "gpu-0")))
		}
		fc.Step(time.Second)
		if next, err := b.pass(ctx); err != nil || !next.IsZero() {
			t.Fatalf("at the ready time: next %v, err %v", next, err)
		}
		n = get(t, c, "gpu-0")
		if booting(n) || n.Annotations[v1alpha1.AnnotationKwokManaged] != v1alpha1.KwokManagedValue || n.Annotations[v1alpha1.AnnotationKwokReadyAt] != "" {
			t.Errorf("after the boot: labels %v annotations %v; want the boot marks gone and kwok back", n.Labels, n.Annotations)
		}
		want := corev1.ConditionTrue
		if persists {
			want = corev1.ConditionFalse
		}
		if got := cond(n, gpuCondition); got.Status != want || cond(n, kernelCondition).Status != corev1.ConditionTrue {
			t.Errorf("fault persists %v: GPU condition %+v, kernel %+v; want GPU %s, kernel True", persists, got, cond(n, kernelCondition), want)
		}
		// The same token again is a no-op: no second boot.
		if _, err := p.Reboot(ctx, n, "inc-1"); err != nil || booting(get(t, c, "gpu-0")) {
			t.Errorf("repeated Reboot: %v, booting %v; want nothing done", err, booting(get(t, c, "gpu-0")))
		}
	}
}

func get(t *testing.T, c client.Client, name string) *corev1.Node {
	t.Helper()
	var n corev1.Node
	if err := c.Get(t.Context(), client.ObjectKey{Name: name}, &n); err != nil {
		t.Fatal(err)
	}
	return &n
}

func cond(n *corev1.Node, t corev1.NodeConditionType) corev1.NodeCondition {
	if c := condition(n, t); c != nil {
		return *c
	}
	return corev1.NodeCondition{}
}

func booting(n *corev1.Node) bool { return n.Labels[v1alpha1.LabelKwokBooting] == "true" }
