package fleetview

import (
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
)

var at = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// nodeSpec describes a test node in a few fields.
type nodeSpec struct {
	name        string
	gpus        int // capacity; 0: none reported
	healthyGPUs int // -1: no label
	gpuOK       corev1.ConditionStatus
	kernelOK    corev1.ConditionStatus
	ready       corev1.ConditionStatus
	reason      string // of a condition that is not True
	tier, score string
	warnings    string
	cordoned    bool
}

func (s nodeSpec) node() corev1.Node {
	n := corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: s.name, Labels: map[string]string{}, Annotations: map[string]string{},
			CreationTimestamp: metav1.NewTime(at.Add(-time.Hour))},
		Spec: corev1.NodeSpec{Unschedulable: s.cordoned},
	}
	if s.gpus > 0 {
		n.Status.Capacity = corev1.ResourceList{v1alpha1.ResourceNvidiaGPU: *resource.NewQuantity(int64(s.gpus), resource.DecimalSI)}
	}
	if s.healthyGPUs >= 0 {
		n.Labels[v1alpha1.LabelGPUHealthyCount] = strconv.Itoa(s.healthyGPUs)
	}
	if s.tier != "" {
		n.Labels[v1alpha1.LabelHealthTier] = s.tier
	}
	if s.score != "" {
		n.Annotations[v1alpha1.AnnotationHealthScore] = s.score
	}
	if s.warnings != "" {
		n.Annotations[v1alpha1.AnnotationActiveWarnings] = s.warnings
	}
	for _, c := range []struct {
		t  corev1.NodeConditionType
		st corev1.ConditionStatus
	}{{v1alpha1.ConditionGPUHealAcceleratorHealthy, s.gpuOK}, {v1alpha1.ConditionGPUHealKernelHealthy, s.kernelOK}, {corev1.NodeReady, s.ready}} {
		if c.st == "" {
			continue
		}
		nc := corev1.NodeCondition{Type: c.t, Status: c.st, LastTransitionTime: metav1.NewTime(at)}
		if c.st != corev1.ConditionTrue {
			nc.Reason = s.reason
		}
		n.Status.Conditions = append(n.Status.Conditions, nc)
	}
	return n
}

// incident is a NodeRemediation created at opened whose phases were entered
// at the given offsets from opened: phase, duration, phase, duration, ...
func incident(name, node string, opened time.Time, action v1alpha1.Action, phases ...any) v1alpha1.NodeRemediation {
	nr := v1alpha1.NodeRemediation{
		ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(opened)},
		Spec:       v1alpha1.NodeRemediationSpec{NodeName: node, PolicyName: "default"},
		Status:     v1alpha1.NodeRemediationStatus{Action: action},
	}
	for i := 0; i+1 < len(phases); i += 2 {
		p := phases[i].(v1alpha1.Phase)
		nr.Status.Phase = p
		nr.Status.Phases = append(nr.Status.Phases, v1alpha1.PhaseTransition{
			Phase: p, Time: metav1.NewMicroTime(opened.Add(phases[i+1].(time.Duration))),
		})
	}
	return nr
}
