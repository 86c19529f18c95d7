package remediation

import (
	"testing"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
)

func TestEqualExceptScoreIgnoresOnlyOurScoreKeys(t *testing.T) {
	base := map[string]string{v1alpha1.LabelNvidiaGPUPresent: "true", v1alpha1.LabelHealthTier: "gold"}
	for _, tc := range []struct {
		name string
		b    map[string]string
		want bool
	}{
		{"same", map[string]string{v1alpha1.LabelNvidiaGPUPresent: "true", v1alpha1.LabelHealthTier: "gold"}, true},
		{"tier changed", map[string]string{v1alpha1.LabelNvidiaGPUPresent: "true", v1alpha1.LabelHealthTier: "bronze"}, true},
		{"score added", map[string]string{v1alpha1.LabelNvidiaGPUPresent: "true", v1alpha1.LabelHealthTier: "gold", v1alpha1.AnnotationHealthScore: "90.0"}, true},
		{"label changed", map[string]string{v1alpha1.LabelNvidiaGPUPresent: "false", v1alpha1.LabelHealthTier: "gold"}, false},
		{"opt-out added", map[string]string{v1alpha1.LabelNvidiaGPUPresent: "true", v1alpha1.LabelHealthTier: "gold", v1alpha1.AnnotationRemediation: v1alpha1.RemediationDisabled}, false},
		{"label removed", map[string]string{v1alpha1.LabelHealthTier: "gold"}, false},
	} {
		if got := equalExceptScore(base, tc.b); got != tc.want {
			t.Errorf("%s: equalExceptScore = %v, want %v", tc.name, got, tc.want)
		}
	}
}
