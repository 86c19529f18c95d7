//go:build integration

package nodestatus

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
)

// TestAgentMayOnlyAddTheJoinTaint: under the shipped policy the agent's
// token adds the health gate's join taint to its own never-validated Node
// beside a taint someone else put there, and cannot remove it, change or
// remove the other taint, add another, or mark the node validated; a
// validated node is never tainted.
func TestAgentMayOnlyAddTheJoinTaint(t *testing.T) {
	o := startOwnNode(t)
	ctx, a := o.ctx, o.nodeA
	other := `{"key":"example.com/dedicated","value":"training","effect":"NoSchedule"}`
	if _, err := o.cs.CoreV1().Nodes().Patch(ctx, a, types.MergePatchType, []byte(`{"spec":{"taints":[`+other+`]}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}

	added, err := TaintNeverValidated(ctx, o.agent, a)
	if err != nil || !added {
		t.Fatalf("join taint on its own never-validated node: added %v, %v", added, err)
	}
	if got := taintKeys(t, o, a); !slices.Equal(got, []string{"example.com/dedicated", v1alpha1.TaintValidating}) {
		t.Fatalf("taints %v, want the other one kept and %s added", got, v1alpha1.TaintValidating)
	}
	if added, err := TaintNeverValidated(ctx, o.agent, a); err != nil || added {
		t.Errorf("join taint again: added %v, %v; want nothing to do", added, err)
	}

	validating := fmt.Sprintf(`{"key":%q,"effect":"NoSchedule"}`, v1alpha1.TaintValidating)
	for name, body := range map[string]string{
		"removing the join taint":     `{"spec":{"taints":[` + other + `]}}`,
		"removing every taint":        `{"spec":{"taints":null}}`,
		"removing another taint":      `{"spec":{"taints":[` + validating + `]}}`,
		"changing another taint":      `{"spec":{"taints":[` + strings.Replace(other, "NoSchedule", "PreferNoSchedule", 1) + `,` + validating + `]}}`,
		"adding another taint":        `{"spec":{"taints":[` + other + `,` + validating + `,{"key":"evil","effect":"NoExecute"}]}}`,
		"the join taint as NoExecute": `{"spec":{"taints":[` + other + `,` + strings.Replace(validating, "NoSchedule", "NoExecute", 1) + `]}}`,
		"marking the node validated":  fmt.Sprintf(`{"metadata":{"annotations":{%q:"2026-12-01T11:00:00Z"}}}`, v1alpha1.AnnotationValidatedAt),
		"cordoning beside the taint":  `{"spec":{"unschedulable":true,"taints":[` + other + `,` + validating + `]}}`,
	} {
		err := patch(o, a, "", types.MergePatchType, body)
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "gpuheal-agent may") {
			t.Errorf("%s: %v, want denied by the policy", name, err)
		}
	}

	// A node an agent has reported on before joined already: a restarted
	// agent, or one after a reboot, leaves it alone, validated or not.
	n, err := o.cs.CoreV1().Nodes().Get(ctx, a, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == v1alpha1.TaintValidating })
	n.Annotations[v1alpha1.AnnotationAgentChecks] = `{"time":"2026-12-01T10:00:00Z","checks":[]}`
	if n, err = o.cs.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if added, err := TaintNeverValidated(ctx, o.agent, a); err != nil || added {
		t.Errorf("join taint on a node with a checks report: added %v, %v; want none", added, err)
	}
	// The controller marks the node on a pass: the agent leaves it alone.
	delete(n.Annotations, v1alpha1.AnnotationAgentChecks)
	n.Annotations[v1alpha1.AnnotationValidatedAt] = "2026-12-01T11:00:00Z"
	if _, err := o.cs.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if added, err := TaintNeverValidated(ctx, o.agent, a); err != nil || added {
		t.Errorf("join taint on a validated node: added %v, %v; want none", added, err)
	}
	if got := taintKeys(t, o, a); !slices.Equal(got, []string{"example.com/dedicated"}) {
		t.Errorf("taints of the validated node %v", got)
	}
	if _, err := TaintNeverValidated(ctx, o.agent, o.nodeB); !apierrors.IsForbidden(err) {
		t.Errorf("join taint on another node: %v, want forbidden", err)
	}
}

func taintKeys(t *testing.T, o *ownNode, node string) []string {
	t.Helper()
	n, err := o.cs.CoreV1().Nodes().Get(o.ctx, node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, tt := range n.Spec.Taints {
		keys = append(keys, tt.Key)
	}
	return keys
}
