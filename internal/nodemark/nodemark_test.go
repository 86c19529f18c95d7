package nodemark

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
)

// TestRelease: gpuheal's marks go, anyone else's stay.
func TestRelease(t *testing.T) {
	ours := corev1.Taint{Key: v1alpha1.TaintUnhealthy, Effect: corev1.TaintEffectNoSchedule}
	theirs := corev1.Taint{Key: v1alpha1.TaintKarpenterDisrupted, Effect: corev1.TaintEffectNoSchedule}
	gate := corev1.Taint{Key: v1alpha1.TaintValidating, Effect: corev1.TaintEffectNoSchedule}
	node := func(cordoned bool, ann map[string]string, taints ...corev1.Taint) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Annotations: ann}, Spec: corev1.NodeSpec{Unschedulable: cordoned, Taints: taints}}
	}
	for _, tc := range []struct {
		name    string
		in      *corev1.Node
		changed bool
		want    *corev1.Node
	}{
		{"our cordon", node(true, map[string]string{v1alpha1.AnnotationCordonedBy: "nr"}, ours, theirs), true, node(false, map[string]string{}, theirs)},
		{"ours over someone's earlier cordon", node(true, map[string]string{v1alpha1.AnnotationCordonedBy: "nr", v1alpha1.AnnotationWasUnschedulable: "true"}, ours),
			true, node(true, map[string]string{}, []corev1.Taint{}...)},
		{"our taint beside their cordon", node(true, nil, ours), true, node(true, nil, []corev1.Taint{}...)},
		{"the gate's join taint", node(false, nil, gate, theirs), true, node(false, nil, theirs)},
		{"the gate's taint beside our cordon", node(true, map[string]string{v1alpha1.AnnotationCordonedBy: "nr"}, ours, gate), true, node(false, map[string]string{}, []corev1.Taint{}...)},
		{"their cordon only", node(true, nil, theirs), false, node(true, nil, theirs)},
		{"nothing", node(false, nil), false, node(false, nil)},
	} {
		n := tc.in.DeepCopy()
		if got := Release(n); got != tc.changed || Ours(n) {
			t.Errorf("%s: Release = %v (want %v), ours after: %v", tc.name, got, tc.changed, Ours(n))
		}
		if diff := cmp.Diff(tc.want, n); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}
