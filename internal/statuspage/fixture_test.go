package statuspage

import (
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
)

func testScheme(t testing.TB) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// nodeSpec describes a test node in a few fields.
type nodeSpec struct {
	name        string
	gpus        int
	healthyGPUs int // -1: no label
	gpuOK       corev1.ConditionStatus
	kernelOK    corev1.ConditionStatus
	ready       corev1.ConditionStatus
	reason      string // of a False condition
	tier, score string
	cordoned    bool
}

func (s nodeSpec) node(at time.Time) *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: s.name, Labels: map[string]string{}, Annotations: map[string]string{}},
		Spec:       corev1.NodeSpec{Unschedulable: s.cordoned},
		Status: corev1.NodeStatus{Capacity: corev1.ResourceList{
			v1alpha1.ResourceNvidiaGPU: *resource.NewQuantity(int64(s.gpus), resource.DecimalSI),
		}},
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

// incident returns a NodeRemediation opened at opened whose phases were
// entered at the given offsets from opened.
func incident(name, node string, detected, opened time.Time, action v1alpha1.Action, phases ...any) *v1alpha1.NodeRemediation {
	nr := &v1alpha1.NodeRemediation{
		ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(opened)},
		Spec: v1alpha1.NodeRemediationSpec{NodeName: node, PolicyName: "default", Trigger: v1alpha1.Trigger{
			Type: v1alpha1.ConditionGPUHealAcceleratorHealthy, Status: metav1.ConditionFalse, Reason: "NvidiaXID79Error", Since: metav1.NewTime(detected),
		}},
		Status: v1alpha1.NodeRemediationStatus{Action: action},
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
