package remediation

import (
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
)

// TestDrainLeavesTheControllersOwnPod: the controller runs on the node it
// drains (a small cluster, or GPU nodes only). It evicts the workload and
// leaves itself; evicting itself would stall the incident, since its
// replacement could only be scheduled on the cordoned node (found on a
// real one-node cluster).
func TestDrainLeavesTheControllersOwnPod(t *testing.T) {
	h := newHarness(t, "self", 2)
	h.create(fastPolicy("self", "self"))
	node := h.nodes[0]
	h.runPod("default", "gpuheal-controller-0", node, map[string]string{"app": "gpuheal-controller"})
	h.runPod("default", "trainer-0", node, map[string]string{"app": "trainer"})
	h.startController(controllerConfig{self: types.NamespacedName{Namespace: "default", Name: "gpuheal-controller-0"}})
	h.breakGPU(node, "reboot")
	nr := h.waitPhase(node, v1alpha1.PhaseSucceeded, 90*time.Second)
	if !slices.Equal(nr.Status.EvictedPods, []string{"default/trainer-0"}) {
		t.Errorf("evicted %v, want only the workload", nr.Status.EvictedPods)
	}
	i := slices.IndexFunc(nr.Status.Phases, func(p v1alpha1.PhaseTransition) bool { return p.Phase == v1alpha1.PhaseDrained })
	if i < 0 || !strings.Contains(nr.Status.Phases[i].Message, "controller's own pod left in place") {
		t.Errorf("phases %+v: want Drained saying the controller's own pod stayed", nr.Status.Phases)
	}
}
