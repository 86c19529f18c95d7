package remediation

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/audit"
)

// TestForceDeleteAuditsEachPodAndHonoursEmptyDir: after the drain timeout
// onTimeout: ForceDelete deletes the pod a PDB held, with an audit record
// of its own, and leaves a pod with an emptyDir volume when the policy does
// not allow deleting emptyDir data: that pod keeps holding the drain.
func TestForceDeleteAuditsEachPodAndHonoursEmptyDir(t *testing.T) {
	e := newClockEnv(t, pdbRefuses("default/critical-0"))
	no := false
	e.policy("p", func(s *v1alpha1.RemediationPolicySpec) {
		s.Drain.OnTimeout, s.Drain.DeleteEmptyDirData = v1alpha1.DrainForceDelete, &no
	})
	node := e.addNodes("gpu", 1)[0]
	e.runPod("default", "critical-0", node, nil)
	runScratchPod(e, node)
	e.breakGPU(node, "replace")
	e.step(2 * time.Minute)
	e.step(10*time.Minute + e.opts.Poll)

	nr := e.only(node)
	if nr.Status.Phase != v1alpha1.PhaseDraining {
		t.Fatalf("phase %s (%s), want still Draining: the emptyDir pod may not be deleted", nr.Status.Phase, nr.Status.Message)
	}
	if c := meta.FindStatusCondition(nr.Status.Conditions, v1alpha1.ConditionDrainBlocked); c == nil || c.Status != metav1.ConditionTrue || !contains(c.Message, "default/scratch-0 (emptyDir)") {
		t.Errorf("DrainBlocked %+v, want True naming the emptyDir pod", c)
	}
	var pod corev1.Pod
	if err := e.c.Get(e.ctx, client.ObjectKey{Namespace: "default", Name: "scratch-0"}, &pod); err != nil {
		t.Errorf("the emptyDir pod was deleted although deleteEmptyDirData is false: %v", err)
	}
	if err := e.c.Get(e.ctx, client.ObjectKey{Namespace: "default", Name: "critical-0"}, &pod); !apierrors.IsNotFound(err) {
		t.Errorf("the PDB-held pod was not force-deleted after the timeout: %v", err)
	}
	if got := nr.Status.EvictedPods; len(got) != 1 || got[0] != "default/critical-0" {
		t.Errorf("evictedPods %v, want only default/critical-0", got)
	}
	forced := map[string]int{}
	for _, r := range e.audit.Records() {
		if r.Kind == audit.Evicted && r.Reason == v1alpha1.ReasonForceDeleted {
			forced[r.Pod]++
		}
	}
	if len(forced) != 1 || forced["default/critical-0"] != 1 {
		t.Errorf("force-delete audit records by pod %v, want one for default/critical-0", forced)
	}
}

// TestForceDeleteOfEmptyDirPodsWhenAllowed: with deleteEmptyDirData (the
// default) a pod with an emptyDir that will not leave is force-deleted like
// any other, and audited.
func TestForceDeleteOfEmptyDirPodsWhenAllowed(t *testing.T) {
	e := newClockEnv(t, pdbRefuses("default/scratch-0"))
	e.policy("p", func(s *v1alpha1.RemediationPolicySpec) { s.Drain.OnTimeout = v1alpha1.DrainForceDelete })
	node := e.addNodes("gpu", 1)[0]
	runScratchPod(e, node)
	e.breakGPU(node, "replace")
	e.step(2 * time.Minute)
	e.step(10*time.Minute + e.opts.Poll)
	if nr := e.only(node); nr.Status.Phase != v1alpha1.PhaseVerifying {
		t.Fatalf("phase %s, want the replacement requested once the pod was force-deleted", nr.Status.Phase)
	}
	n := 0
	for _, r := range e.audit.Records() {
		if r.Kind == audit.Evicted && r.Reason == v1alpha1.ReasonForceDeleted && r.Pod == "default/scratch-0" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d force-delete audit records for default/scratch-0, want 1", n)
	}
}

// runScratchPod runs default/scratch-0 on node with an emptyDir volume.
func runScratchPod(e *clockEnv, node string) {
	e.t.Helper()
	e.create(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "scratch-0"},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "main", Image: "trainer:latest"}},
			Volumes: []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}},
	})
}
