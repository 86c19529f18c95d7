package fleetview

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
)

func TestState(t *testing.T) {
	t.Parallel()
	const T, F, U = corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionUnknown
	open := incident("n-1", "n", at, v1alpha1.ActionReboot, v1alpha1.PhaseDraining, time.Duration(0))
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
		{"cordoned", nodeSpec{gpuOK: T, cordoned: true}, nil, StateCordoned, ""},
		{"remediating and healthy again", nodeSpec{gpuOK: T}, &open, StateRemediating, v1alpha1.PhaseDraining},
		{"remediating wins over cordoned", nodeSpec{gpuOK: T, cordoned: true}, &open, StateRemediating, v1alpha1.PhaseDraining},
		{"a fault wins over remediation", nodeSpec{gpuOK: F, cordoned: true}, &open, StateUnhealthy, v1alpha1.PhaseDraining},
		{"active warnings", nodeSpec{gpuOK: T, warnings: "2"}, nil, StateWarning, ""},
		{"no warnings", nodeSpec{gpuOK: T, warnings: "0"}, nil, StateHealthy, ""},
		{"a GPU short", nodeSpec{gpuOK: T, healthyGPUs: 7}, nil, StateWarning, ""},
		{"cordoned wins over a warning", nodeSpec{gpuOK: T, warnings: "1", cordoned: true}, nil, StateCordoned, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.spec.name, tt.spec.gpus = "n", 8
			if tt.spec.healthyGPUs == 0 {
				tt.spec.healthyGPUs = -1
			}
			n := tt.spec.node()
			got := RowOf(&n, tt.open)
			if got.State != tt.want || got.Phase != tt.wantPhase {
				t.Errorf("state %q phase %q, want %q %q", got.State, got.Phase, tt.want, tt.wantPhase)
			}
		})
	}
}

func TestRowFields(t *testing.T) {
	t.Parallel()
	n := nodeSpec{name: "gpu-a", gpus: 8, healthyGPUs: 7, gpuOK: corev1.ConditionFalse, kernelOK: corev1.ConditionTrue,
		reason: "NvidiaXID79Error", tier: "silver", score: "71.5", warnings: "3", cordoned: true}.node()
	open := incident("gpu-a-1", "gpu-a", at, v1alpha1.ActionReplace)
	got := RowOf(&n, &open)
	seven, score := 7, 71.5
	want := Row{
		Name: "gpu-a", State: StateUnhealthy, HealthyGPUs: &seven, GPUs: 8, Tier: "silver", Score: &score, Unschedulable: true,
		ActiveWarnings: 3, Incident: "gpu-a-1", Phase: v1alpha1.PhasePending, Action: v1alpha1.ActionReplace,
		Created: at.Add(-time.Hour),
		Conditions: []Condition{
			{Type: v1alpha1.ConditionGPUHealAcceleratorHealthy, Status: "False", Reason: "NvidiaXID79Error", Since: at},
			{Type: v1alpha1.ConditionGPUHealKernelHealthy, Status: "True", Since: at},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("row (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"GPUHealAcceleratorHealthy=False (NvidiaXID79Error)"}, got.Problems()); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
}

func TestBadLabelsAreUnknown(t *testing.T) {
	t.Parallel()
	n := nodeSpec{name: "gpu-a", gpus: 4, healthyGPUs: -1}.node()
	n.Labels[v1alpha1.LabelGPUHealthyCount] = "eight"
	n.Annotations[v1alpha1.AnnotationHealthScore] = "high"
	n.Annotations[v1alpha1.AnnotationActiveWarnings] = "some"
	got := RowOf(&n, nil)
	if got.HealthyGPUs != nil || got.Score != nil || got.ActiveWarnings != 0 || got.GPUs != 4 || got.State != StateHealthy {
		t.Errorf("row %+v: want unknown GPUs, score and warnings, 4 GPUs, healthy", got)
	}
}

// Without a device plugin's capacity the GPU-count label counts.
func TestGPUsFromLabel(t *testing.T) {
	t.Parallel()
	n := nodeSpec{name: "gpu-a", healthyGPUs: -1}.node()
	n.Labels[v1alpha1.LabelNvidiaGPUCount] = "4"
	if got := RowOf(&n, nil); got.GPUs != 4 {
		t.Errorf("GPUs %d, want 4 from %s", got.GPUs, v1alpha1.LabelNvidiaGPUCount)
	}
}

func TestOpenIncidentIsTheNewestNotEnded(t *testing.T) {
	t.Parallel()
	rems := []v1alpha1.NodeRemediation{
		incident("a-old", "a", at.Add(-time.Hour), v1alpha1.ActionReboot, v1alpha1.PhaseDraining, time.Duration(0)),
		incident("a-new", "a", at, v1alpha1.ActionReboot, v1alpha1.PhaseRebooting, time.Duration(0)),
		incident("a-done", "a", at.Add(time.Hour), v1alpha1.ActionReboot, v1alpha1.PhaseSucceeded, time.Duration(0)),
		incident("b-done", "b", at, v1alpha1.ActionReboot, v1alpha1.PhaseFailed, time.Duration(0)),
	}
	open := OpenIncidents(rems)
	if len(open) != 1 || open["a"] == nil || open["a"].Name != "a-new" {
		t.Errorf("open incidents %v, want only a-new on a", open)
	}
}

func TestSortWorstFirst(t *testing.T) {
	t.Parallel()
	s := func(v float64) *float64 { return &v }
	rows := []Row{
		{Name: "h-unscored", State: StateHealthy},
		{Name: "h-90", State: StateHealthy, Score: s(90)},
		{Name: "w", State: StateWarning},
		{Name: "u-b", State: StateUnhealthy, Score: s(50)},
		{Name: "u-a", State: StateUnhealthy, Score: s(50)},
		{Name: "c", State: StateCordoned},
		{Name: "r", State: StateRemediating, Score: s(99)},
		{Name: "u-low", State: StateUnhealthy, Score: s(10)},
	}
	SortWorstFirst(rows)
	var got []string
	for _, r := range rows {
		got = append(got, r.Name)
	}
	want := []string{"u-low", "u-a", "u-b", "r", "c", "w", "h-90", "h-unscored"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}

// TestViewJSON compares the one JSON shape with a golden file; the CLI and
// the status page emit exactly this. GPUHEAL_UPDATE_GOLDEN=1 rewrites it.
func TestViewJSON(t *testing.T) {
	t.Parallel()
	const T, F = corev1.ConditionTrue, corev1.ConditionFalse
	nodes := []corev1.Node{
		nodeSpec{name: "gpu-b", gpus: 8, healthyGPUs: 7, gpuOK: F, kernelOK: T, ready: T, reason: "NvidiaXID79Error", tier: "bronze", score: "40", cordoned: true}.node(),
		nodeSpec{name: "gpu-a", gpus: 8, healthyGPUs: 8, gpuOK: T, kernelOK: T, ready: T, tier: "gold", score: "100"}.node(),
		nodeSpec{name: "gpu-c", gpus: 4, healthyGPUs: -1, ready: T, cordoned: true}.node(),
		nodeSpec{name: "gpu-d", gpus: 8, healthyGPUs: 8, gpuOK: T, ready: T, warnings: "1"}.node(),
		nodeSpec{name: "gpu-e", gpus: 8, healthyGPUs: 8, gpuOK: T, ready: T}.node(),
	}
	rems := []v1alpha1.NodeRemediation{
		incident("gpu-b-2", "gpu-b", at, v1alpha1.ActionReboot, v1alpha1.PhasePending, time.Duration(0), v1alpha1.PhaseDraining, time.Second),
		incident("gpu-e-1", "gpu-e", at, v1alpha1.ActionReboot, v1alpha1.PhasePending, time.Duration(0), v1alpha1.PhaseVerifying, time.Minute),
	}
	v := Build(nodes, rems)
	v.Policies = PoliciesOf([]v1alpha1.RemediationPolicy{
		{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Status: v1alpha1.RemediationPolicyStatus{MatchedNodes: 5, UnhealthyNodes: 1, InFlight: 2}},
		{ObjectMeta: metav1.ObjectMeta{Name: "b200"}, Spec: v1alpha1.RemediationPolicySpec{DryRun: true}, Status: v1alpha1.RemediationPolicyStatus{
			MatchedNodes: 10, UnhealthyNodes: 4, BreakerOpen: true,
			Conditions: []metav1.Condition{{Type: v1alpha1.ConditionBreakerOpen, Status: metav1.ConditionTrue, Message: "4 of 10 unhealthy, more than maxUnhealthy (2)"},
				{Type: v1alpha1.ConditionProviderReady, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonPermissionDenied, Message: "provider aws: role x may not ec2:RebootInstances"}},
		}},
	})
	want := Summary{Nodes: 5, Unhealthy: 1, Remediating: 1, Cordoned: 1, Warning: 1, Healthy: 1, GPUs: 36, HealthyGPUs: 31}
	if diff := cmp.Diff(want, v.Summary); diff != "" {
		t.Errorf("summary (-want +got):\n%s", diff)
	}
	got, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "view.json")
	if os.Getenv("GPUHEAL_UPDATE_GOLDEN") == "1" {
		if err := os.WriteFile(golden, append(got, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	wantJSON, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(wantJSON), string(got)+"\n"); diff != "" {
		t.Errorf("JSON (-%s +got):\n%s", golden, diff)
	}
}
