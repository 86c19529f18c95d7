package statuspage

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
)

func TestNodeState(t *testing.T) {
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	const T, F, U = corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionUnknown
	open := incident("n-1", "n", at, at, v1alpha1.ActionReboot, v1alpha1.PhaseDraining, time.Duration(0))
	tests := []struct {
		name      string
		spec      nodeSpec
		open      *v1alpha1.NodeRemediation
		want      State
		wantPhase v1alpha1.Phase
	}{
		{"all conditions true", nodeSpec{gpuOK: T, kernelOK: T, ready: T}, nil, StateHealthy, ""},
		{"nothing reported yet", nodeSpec{}, nil, StateHealthy, ""},
		{"gpu condition false", nodeSpec{gpuOK: F, kernelOK: T, ready: T}, nil, StateUnhealthy, ""},
		{"kernel condition false", nodeSpec{gpuOK: T, kernelOK: F, ready: T}, nil, StateUnhealthy, ""},
		{"gpu condition unknown is no fault", nodeSpec{gpuOK: U, kernelOK: T, ready: T}, nil, StateHealthy, ""},
		{"kubelet not ready", nodeSpec{gpuOK: T, kernelOK: T, ready: F}, nil, StateUnhealthy, ""},
		{"kubelet silent", nodeSpec{gpuOK: T, kernelOK: T, ready: U}, nil, StateUnhealthy, ""},
		{"cordoned", nodeSpec{gpuOK: T, cordoned: true}, nil, StateRemediating, ""},
		{"remediating and healthy again", nodeSpec{gpuOK: T}, open, StateRemediating, v1alpha1.PhaseDraining},
		{"a fault wins over remediation", nodeSpec{gpuOK: F, cordoned: true}, open, StateUnhealthy, v1alpha1.PhaseDraining},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.spec.name, tt.spec.gpus, tt.spec.healthyGPUs = "n", 8, -1
			got := nodeOf(tt.spec.node(at), tt.open)
			if got.State != tt.want || got.Phase != tt.wantPhase {
				t.Errorf("state %q phase %q, want %q %q", got.State, got.Phase, tt.want, tt.wantPhase)
			}
		})
	}
}

func TestNodeFields(t *testing.T) {
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	spec := nodeSpec{name: "gpu-a", gpus: 8, healthyGPUs: 7, gpuOK: corev1.ConditionFalse, kernelOK: corev1.ConditionTrue,
		reason: "NvidiaXID79Error", tier: "silver", score: "71.5", cordoned: true}
	got := nodeOf(spec.node(at), nil)
	seven, score := 7, 71.5
	want := Node{
		Name: "gpu-a", State: StateUnhealthy, HealthyGPUs: &seven, GPUs: 8, Tier: "silver", Score: &score, Unschedulable: true,
		Conditions: []Condition{
			{Type: ConditionGPU, Status: "False", Reason: "NvidiaXID79Error", Since: at},
			{Type: ConditionKernel, Status: "True", Since: at},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("node (-want +got):\n%s", diff)
	}
}

func TestBadLabelsAreUnknown(t *testing.T) {
	n := nodeSpec{name: "gpu-a", gpus: 4, healthyGPUs: -1}.node(time.Now())
	n.Labels[HealthyGPUsLabel] = "eight"
	n.Annotations[ScoreAnnotation] = "high"
	got := nodeOf(n, nil)
	if got.HealthyGPUs != nil || got.Score != nil || got.GPUs != 4 {
		t.Errorf("healthy GPUs %v, score %v, GPUs %d: want unknown, unknown, 4", got.HealthyGPUs, got.Score, got.GPUs)
	}
}
