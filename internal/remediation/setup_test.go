package remediation

import "testing"

func TestEqualExceptScoreIgnoresOnlyOurScoreKeys(t *testing.T) {
	base := map[string]string{"nvidia.com/gpu.present": "true", TierLabel: "gold"}
	for _, tc := range []struct {
		name string
		b    map[string]string
		want bool
	}{
		{"same", map[string]string{"nvidia.com/gpu.present": "true", TierLabel: "gold"}, true},
		{"tier changed", map[string]string{"nvidia.com/gpu.present": "true", TierLabel: "bronze"}, true},
		{"score added", map[string]string{"nvidia.com/gpu.present": "true", TierLabel: "gold", ScoreAnnotation: "90.0"}, true},
		{"label changed", map[string]string{"nvidia.com/gpu.present": "false", TierLabel: "gold"}, false},
		{"opt-out added", map[string]string{"nvidia.com/gpu.present": "true", TierLabel: "gold", OptOutAnnotation: OptOutValue}, false},
		{"label removed", map[string]string{TierLabel: "gold"}, false},
	} {
		if got := equalExceptScore(base, tc.b); got != tc.want {
			t.Errorf("%s: equalExceptScore = %v, want %v", tc.name, got, tc.want)
		}
	}
}
