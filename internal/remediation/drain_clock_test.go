package remediation

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/provider/fake"
)

// pdbRefuses answers evictions of the pods named as the Eviction API does
// while their PodDisruptionBudget allows no disruption (429). That the real
// API server does so is checked by TestLifecycle (integration).
func pdbRefuses(pods ...string) interceptor.Funcs {
	return interceptor.Funcs{
		SubResourceCreate: func(ctx context.Context, c client.Client, sub string, obj, subObj client.Object, opts ...client.SubResourceCreateOption) error {
			for _, p := range pods {
				if sub == "eviction" && obj.GetNamespace()+"/"+obj.GetName() == p {
					return apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 10)
				}
			}
			return c.SubResource(sub).Create(ctx, obj, subObj, opts...)
		},
	}
}

// TestDrainTimeoutThenPolicyChoice: a PDB holds the drain for the policy's
// 10m drain timeout; then each onTimeout choice does what it says.
func TestDrainTimeoutThenPolicyChoice(t *testing.T) {
	for _, tc := range []struct {
		onTimeout v1alpha1.DrainTimeoutAction
		want      v1alpha1.Phase // once the timeout has passed
		evicted   int
	}{
		{v1alpha1.DrainForceDelete, v1alpha1.PhaseVerifying, 1},
		{v1alpha1.DrainProceed, v1alpha1.PhaseVerifying, 0},
		{v1alpha1.DrainWait, v1alpha1.PhaseDraining, 0},
	} {
		t.Run(string(tc.onTimeout), func(t *testing.T) {
			e := newClockEnv(t, pdbRefuses("default/critical-0"))
			e.policy("p", func(s *v1alpha1.RemediationPolicySpec) { s.Drain.OnTimeout = tc.onTimeout })
			node := e.addNodes("gpu", 1)[0]
			e.runPod("default", "critical-0", node, map[string]string{"app": "critical"})
			e.breakGPU(node, "replace")
			e.step(2 * time.Minute)

			nr := e.only(node)
			c := meta.FindStatusCondition(nr.Status.Conditions, v1alpha1.ConditionDrainBlocked)
			if nr.Status.Phase != v1alpha1.PhaseDraining || c == nil || c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.ReasonEvictionRefused {
				t.Fatalf("phase %s, DrainBlocked %+v: want Draining, blocked by the PDB", nr.Status.Phase, c)
			}
			e.step(10 * time.Minute) // exactly the timeout: not past it
			if nr := e.only(node); nr.Status.Phase != v1alpha1.PhaseDraining {
				t.Fatalf("phase %s at the timeout, want still Draining", nr.Status.Phase)
			}
			e.step(e.opts.Poll)
			nr = e.only(node)
			if nr.Status.Phase != tc.want || len(nr.Status.EvictedPods) != tc.evicted {
				t.Fatalf("after the timeout: phase %s (%s), evicted %v; want %s and %d evicted",
					nr.Status.Phase, nr.Status.Message, nr.Status.EvictedPods, tc.want, tc.evicted)
			}
			if d := enteredAt(&nr, v1alpha1.PhaseDrained).Sub(enteredAt(&nr, v1alpha1.PhaseDraining)); tc.want != v1alpha1.PhaseDraining && d <= 10*time.Minute {
				t.Errorf("drain ended %v after it started, not after the 10m timeout", d)
			}
			var pod corev1.Pod
			err := e.c.Get(e.ctx, client.ObjectKey{Namespace: "default", Name: "critical-0"}, &pod)
			if gone := apierrors.IsNotFound(err); gone != (tc.onTimeout == v1alpha1.DrainForceDelete) {
				t.Errorf("pod gone = %v (err %v), want gone only when force-deleted", gone, err)
			}
			if tc.onTimeout == v1alpha1.DrainWait {
				c := meta.FindStatusCondition(nr.Status.Conditions, v1alpha1.ConditionDrainBlocked)
				if c == nil || c.Status != metav1.ConditionTrue {
					t.Errorf("DrainBlocked %+v, want still True while waiting", c)
				}
				if calls := e.prov.CallsTo(fake.MethodReplace); len(calls) != 0 {
					t.Errorf("provider called while the drain waits: %+v", calls)
				}
			}
		})
	}
}

// TestNodeThatRecoversWhileTheDrainIsHeldIsUncordoned: the GPU comes back
// while a PDB holds the drain; after the recovery hold the incident ends,
// the node is uncordoned and the protected pod never left.
func TestNodeThatRecoversWhileTheDrainIsHeldIsUncordoned(t *testing.T) {
	e := newClockEnv(t, pdbRefuses("default/critical-0"))
	e.policy("p")
	node := e.addNodes("gpu", 1)[0]
	e.runPod("default", "critical-0", node, nil)
	e.breakGPU(node, "reboot")
	e.step(2 * time.Minute)
	e.healGPU(node)
	e.step(59 * time.Second)
	if nr := e.only(node); nr.Status.Phase != v1alpha1.PhaseDraining {
		t.Fatalf("phase %s within the recovery hold, want Draining", nr.Status.Phase)
	}
	e.step(time.Second)
	nr := e.only(node)
	if nr.Status.Phase != v1alpha1.PhaseCancelled || nr.Status.Reason != v1alpha1.ReasonRecovered || len(nr.Status.ProviderRequests) != 0 {
		t.Fatalf("phase %s reason %s requests %v: want Cancelled/Recovered, no provider call", nr.Status.Phase, nr.Status.Reason, nr.Status.ProviderRequests)
	}
	if n, _ := e.node(node); n.Spec.Unschedulable || hasTaint(n) {
		t.Error("node still cordoned after it recovered")
	}
	var pod corev1.Pod
	if err := e.c.Get(e.ctx, client.ObjectKey{Namespace: "default", Name: "critical-0"}, &pod); err != nil {
		t.Errorf("the PDB-protected pod is gone: %v", err)
	}
}

// TestDrainLeavesTheControllersOwnPod: the controller runs on the node it
// drains. It evicts the workload and leaves itself and gpuheal's other pods
// in its namespace (evicting itself would stall the incident where its
// replacement can only be scheduled on the cordoned node; evicting the
// uninstall Job raced the uninstall; both found on a real one-node
// cluster). A pod labelled as gpuheal's elsewhere is anyone's.
func TestDrainLeavesTheControllersOwnPod(t *testing.T) {
	e := newClockEnv(t)
	e.opts.Self = client.ObjectKey{Namespace: "default", Name: "gpuheal-controller-0"}
	e.restart()
	e.policy("p")
	node := e.addNodes("gpu", 1)[0]
	ours := map[string]string{v1alpha1.LabelPartOf: v1alpha1.LabelPartOfValue}
	e.runPod("default", "gpuheal-controller-0", node, map[string]string{"app": "gpuheal-controller"})
	e.runPod("default", "gpuheal-release-0", node, ours)
	e.runPod("other", "gpuheal-lookalike-0", node, ours)
	e.runPod("default", "trainer-0", node, nil)
	e.breakGPU(node, "reboot")
	e.step(2 * time.Minute)
	nr := e.only(node)
	if got, want := nr.Status.EvictedPods, []string{"default/trainer-0", "other/gpuheal-lookalike-0"}; len(got) != 2 || !sameSet(got, want) {
		t.Errorf("evicted %v, want %v", got, want)
	}
	if m := nr.Status.Phases[3].Message; nr.Status.Phases[3].Phase != v1alpha1.PhaseDrained || !contains(m, "gpuheal's own pods left in place") {
		t.Errorf("phases %+v: want Drained saying gpuheal's own pods stayed", nr.Status.Phases)
	}
}
