package remediation

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/finding"
)

func TestScaledLimits(t *testing.T) {
	for _, tc := range []struct {
		v       intstr.IntOrString
		total   int
		roundUp bool
		want    int
	}{
		{intstr.FromString("20%"), 5000, false, 1000},
		{intstr.FromString("20%"), 4, false, 0}, // one unhealthy node of four already trips 20%
		{intstr.FromString("10%"), 5, true, 1},
		{intstr.FromInt32(3), 100, false, 3},
		{intstr.FromString("bogus"), 100, false, 0},
	} {
		if got := scaled(tc.v, tc.total, tc.roundUp); got != tc.want {
			t.Errorf("scaled(%s of %d, up=%v) = %d, want %d", tc.v.String(), tc.total, tc.roundUp, got, tc.want)
		}
	}
	p, err := newPolicy(&v1alpha1.RemediationPolicy{})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.maxParallel(3); got != 1 {
		t.Errorf("default maxParallel of 3 nodes = %d, want 1", got)
	}
	if got := p.maxUnhealthy(5000); got != 1000 {
		t.Errorf("default maxUnhealthy of 5000 nodes = %d, want 1000", got)
	}
}

func TestUnhealthyForWaitsTheMinimumDuration(t *testing.T) {
	p, _ := newPolicy(&v1alpha1.RemediationPolicy{}) // GPUHealAcceleratorHealthy=False for 2m by default
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	node := &corev1.Node{Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
		{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))},
		{Type: gpuCondition, Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(now.Add(-90 * time.Second))},
	}}}
	c, wait := p.unhealthyFor(node, now)
	if c != nil || wait != 30*time.Second {
		t.Fatalf("after 90s: condition %v wait %v, want none and 30s", c, wait)
	}
	c, _ = p.unhealthyFor(node, now.Add(30*time.Second))
	if c == nil || c.Type != gpuCondition {
		t.Fatalf("after 2m: condition %v, want GPUHealAcceleratorHealthy", c)
	}
	if p.unhealthyNow(node) == nil {
		t.Error("unhealthyNow ignores the duration and should count the node")
	}
}

func TestChooseAction(t *testing.T) {
	p, _ := newPolicy(&v1alpha1.RemediationPolicy{Spec: v1alpha1.RemediationPolicySpec{Actions: []v1alpha1.ActionRule{
		{Reason: "NvidiaXID79Error", Action: v1alpha1.ActionReplace},
		{ConditionType: "KernelReady", Action: v1alpha1.ActionCordonOnly},
	}}})
	for _, tc := range []struct {
		trigger v1alpha1.Trigger
		want    v1alpha1.Action
	}{
		{v1alpha1.Trigger{Type: gpuCondition, Reason: "NvidiaXID79Error", RecommendedAction: "reboot"}, v1alpha1.ActionReplace},
		{v1alpha1.Trigger{Type: "KernelReady", Reason: "SoftLockup"}, v1alpha1.ActionCordonOnly},
		{v1alpha1.Trigger{Type: gpuCondition, RecommendedAction: "replace"}, v1alpha1.ActionReplace},
		{v1alpha1.Trigger{Type: gpuCondition, RecommendedAction: "restart-app"}, v1alpha1.ActionIgnore},
		{v1alpha1.Trigger{Type: gpuCondition, RecommendedAction: "reset-gpu"}, v1alpha1.ActionResetGPU},
		{v1alpha1.Trigger{Type: "Ready", Status: metav1.ConditionUnknown}, v1alpha1.ActionReboot},
	} {
		if got := p.chooseAction(tc.trigger); got != tc.want {
			t.Errorf("chooseAction(%+v) = %s, want %s", tc.trigger, got, tc.want)
		}
	}
}

func TestRecommendedActionFromTheAgentsAnnotation(t *testing.T) {
	for _, tc := range []struct {
		name, annotation string
		absent, wantErr  bool
		want             string
	}{
		{name: "advice for the condition", annotation: `{"GPUHealAcceleratorHealthy":"replace","GPUHealKernelHealthy":"reboot"}`, want: "replace"},
		{name: "advice for another condition only", annotation: `{"GPUHealKernelHealthy":"reboot"}`},
		{name: "no annotation (node-problem-detector)", absent: true},
		{name: "not JSON", annotation: "recommended action: replace", wantErr: true},
		{name: "not an object of strings", annotation: `{"GPUHealAcceleratorHealthy":3}`, wantErr: true},
		{name: "unknown action", annotation: `{"GPUHealAcceleratorHealthy":"explode"}`, wantErr: true},
	} {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}
		if !tc.absent {
			n.Annotations = map[string]string{v1alpha1.AnnotationRecommendedActions: tc.annotation}
		}
		got, err := recommendedAction(n, gpuCondition)
		if got != tc.want || (err != nil) != tc.wantErr {
			t.Errorf("%s: recommendedAction = %q, %v; want %q, error %v", tc.name, got, err, tc.want, tc.wantErr)
		}
	}
}

// FuzzRecommendedAction: the annotation comes from any agent on any node;
// reading it must never panic and only ever yield our vocabulary.
func FuzzRecommendedAction(f *testing.F) {
	f.Add(`{"AcceleratedHardwareReady":"replace"}`)
	f.Add(`{"AcceleratedHardwareReady":""}`)
	f.Add(`{"AcceleratedHardwareReady":"reboot","AcceleratedHardwareReady":"replace"}`)
	f.Add(`[1,2]`)
	f.Fuzz(func(t *testing.T, annotation string) {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{v1alpha1.AnnotationRecommendedActions: annotation}}}
		got, err := recommendedAction(n, gpuCondition)
		if err != nil && got != "" {
			t.Fatalf("recommendedAction(%q) = %q with error %v: advice despite the error", annotation, got, err)
		}
		if _, perr := finding.ParseAction(got); got != "" && perr != nil {
			t.Fatalf("recommendedAction(%q) = %q, outside the vocabulary", annotation, got)
		}
	})
}

func TestIncidentNameIsStablePerTransition(t *testing.T) {
	since := metav1.NewTime(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	t1 := v1alpha1.Trigger{Type: gpuCondition, Status: metav1.ConditionFalse, Since: since}
	a, b := incidentName("gpu-node-7", t1), incidentName("gpu-node-7", t1)
	if a != b || !strings.HasPrefix(a, "gpu-node-7-") {
		t.Fatalf("names %q and %q: want equal, prefixed by the node", a, b)
	}
	t2 := t1
	t2.Since = metav1.NewTime(since.Add(time.Minute))
	if incidentName("gpu-node-7", t2) == a {
		t.Error("a later transition must open a new incident")
	}
	if long := incidentName(strings.Repeat("n", 253), t1); len(long) > 253 {
		t.Errorf("name of %d characters exceeds 253", len(long))
	}
}
