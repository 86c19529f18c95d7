package remediation

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
)

// TestDrainLeavesTheControllersOwnPod: the controller runs on the node it
// drains (a small cluster, or GPU nodes only). It evicts the workload and
// leaves itself and gpuheal's other pods in its namespace; evicting itself
// would stall the incident, since its replacement could only be scheduled
// on the cordoned node, and evicting the uninstall Job raced the uninstall
// (both found on a real one-node cluster).
func TestDrainLeavesTheControllersOwnPod(t *testing.T) {
	h := newHarness(t, "self", 2)
	h.create(fastPolicy("self", "self"))
	node := h.nodes[0]
	h.runPod("default", "gpuheal-controller-0", node, map[string]string{"app": "gpuheal-controller"})
	h.runPod("default", "gpuheal-release-0", node, map[string]string{partOfLabel: "gpuheal"})
	h.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "other"}})
	h.runPod("other", "gpuheal-lookalike-0", node, map[string]string{partOfLabel: "gpuheal"})
	h.runPod("default", "trainer-0", node, map[string]string{"app": "trainer"})
	h.startController(controllerConfig{self: types.NamespacedName{Namespace: "default", Name: "gpuheal-controller-0"}})
	h.breakGPU(node, "reboot")
	nr := h.waitPhase(node, v1alpha1.PhaseSucceeded, 90*time.Second)
	// A pod labelled as gpuheal's outside the controller's namespace is
	// anyone's: it is drained like any other.
	slices.Sort(nr.Status.EvictedPods)
	if !slices.Equal(nr.Status.EvictedPods, []string{"default/trainer-0", "other/gpuheal-lookalike-0"}) {
		t.Errorf("evicted %v, want the workload and the look-alike, not gpuheal's own pods", nr.Status.EvictedPods)
	}
	i := slices.IndexFunc(nr.Status.Phases, func(p v1alpha1.PhaseTransition) bool { return p.Phase == v1alpha1.PhaseDrained })
	if i < 0 || !strings.Contains(nr.Status.Phases[i].Message, "gpuheal's own pods left in place") {
		t.Errorf("phases %+v: want Drained saying the controller's own pod stayed", nr.Status.Phases)
	}
}
