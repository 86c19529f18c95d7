//go:build integration

package remediation

import (
	"context"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
)

// TestCordonKeepsTaintsAddedMeanwhile cordons and uncordons from a node
// read before someone else added a taint: the JSON patch's test fails on
// the real API server, the node is read again, and the other taints stay.
func TestCordonKeepsTaintsAddedMeanwhile(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "taints", 1)
	ctx := context.Background()
	name := h.nodes[0]
	stale, _ := h.node(name)
	addTaint := func(key string) {
		t.Helper()
		n, _ := h.node(name)
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: key, Effect: corev1.TaintEffectNoSchedule})
		if err := h.c.Update(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	keys := func(n *corev1.Node) []string {
		var out []string
		for _, t := range n.Spec.Taints {
			out = append(out, t.Key)
		}
		slices.Sort(out)
		return out
	}
	r := &remediationReconciler{client: h.c, reader: h.c}
	in := &incident{node: stale, nr: &v1alpha1.NodeRemediation{ObjectMeta: metav1.ObjectMeta{Name: "taints-incident"}}}

	addTaint("example.com/maintenance")
	before := testutil.ToFloat64(nodePatchConflicts)
	if err := r.cordon(ctx, in); err != nil {
		t.Fatal(err)
	}
	n, _ := h.node(name)
	if got := keys(n); !slices.Contains(got, "example.com/maintenance") || !slices.Contains(got, v1alpha1.TaintUnhealthy) {
		t.Errorf("taints after the cordon %v, want ours and example.com/maintenance", got)
	}
	if !n.Spec.Unschedulable || n.Annotations[v1alpha1.AnnotationCordonedBy] != "taints-incident" {
		t.Errorf("not cordoned by the incident: unschedulable %v, annotations %v", n.Spec.Unschedulable, n.Annotations)
	}
	if testutil.ToFloat64(nodePatchConflicts) <= before {
		t.Error("the stale cordon patch was not refused and retried")
	}

	addTaint("example.com/other")
	before = testutil.ToFloat64(nodePatchConflicts)
	if err := r.uncordon(ctx, in); err != nil {
		t.Fatal(err)
	}
	n, _ = h.node(name)
	if got := keys(n); slices.Contains(got, v1alpha1.TaintUnhealthy) ||
		!slices.Contains(got, "example.com/maintenance") || !slices.Contains(got, "example.com/other") {
		t.Errorf("taints after the uncordon %v, want the two others and not ours", got)
	}
	if n.Spec.Unschedulable || n.Annotations[v1alpha1.AnnotationCordonedBy] != "" {
		t.Errorf("still cordoned: unschedulable %v, annotations %v", n.Spec.Unschedulable, n.Annotations)
	}
	if testutil.ToFloat64(nodePatchConflicts) <= before {
		t.Error("the stale uncordon patch was not refused and retried")
	}
}
