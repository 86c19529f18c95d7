package remediation

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/provider"
)

// TestUnnamedReplacementMustJoinHealthy: where the provider cannot name
// the successor (an Auto Scaling group, Karpenter), the old node being gone
// is not a success. The incident waits for a new node of its policy,
// joined after the request, Ready and healthy, and takes it as its
// replacement; a node that was there before, or one another incident took,
// does not count. Without one, the incident fails at the replace timeout.
func TestUnnamedReplacementMustJoinHealthy(t *testing.T) {
	for _, tc := range []struct {
		name    string
		newNode bool
		want    v1alpha1.Phase
	}{
		{"a new healthy node joins", true, v1alpha1.PhaseSucceeded},
		{"no node joins", false, v1alpha1.PhaseFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newClockEnv(t)
			e.policy("p")
			nodes := e.addNodes("gpu", 2) // gpu-0001 was there before: never the replacement
			old := nodes[0]
			e.breakGPU(old, "replace")
			e.step(2 * time.Minute)
			if err := e.c.Delete(e.ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: old}}); err != nil {
				t.Fatal(err)
			}
			e.prov.SetStatus(old, provider.InstanceStatus{State: provider.StateGone})
			e.step(e.opts.Poll)
			if nr := e.only(old); nr.Status.Phase != v1alpha1.PhaseVerifying {
				t.Fatalf("phase %s (%s) with the old node gone and no successor, want Verifying", nr.Status.Phase, nr.Status.Message)
			}
			if tc.newNode {
				e.step(time.Minute)
				repl := e.addNodes("asg", 1)[0]
				e.healGPU(repl)
				e.step(e.opts.Poll)
				if nr := e.only(old); nr.Status.Phase != v1alpha1.PhaseVerifying {
					t.Fatalf("phase %s within the new node's recovery hold, want Verifying", nr.Status.Phase)
				}
				e.step(time.Minute)
				if nr := e.only(old); nr.Status.Replacement != repl {
					t.Errorf("replacement %q, want the node that joined, %s", nr.Status.Replacement, repl)
				}
			}
			e.step(30 * time.Minute)
			if nr := e.only(old); nr.Status.Phase != tc.want {
				t.Errorf("phase %s (%s), want %s", nr.Status.Phase, nr.Status.Message, tc.want)
			}
		})
	}
}
