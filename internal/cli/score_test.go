package cli

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuheal/gpuheal/internal/testenv"
)

func TestScore(t *testing.T) {
	env := testenv.ForTest(t, testenv.Options{})
	nodes := []struct {
		name, score, tier, gpus string
	}{
		{"gpu-gold", "95.0", "gold", ""},
		{"gpu-bronze", "40.5", "bronze", `{"GPU-1111":"88.0","GPU-2222":"40.5"}`},
		{"gpu-silver", "81.9", "silver", `{"GPU-3333":"81.9"}`},
		{"cpu-new", "", "", ""},
	}
	for _, n := range nodes {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name, Labels: map[string]string{}, Annotations: map[string]string{}}}
		if n.score != "" {
			node.Annotations[scoreAnnotation] = n.score
			node.Labels[tierLabel] = n.tier
		}
		if n.gpus != "" {
			node.Annotations[gpuScoresAnnotation] = n.gpus
		}
		if err := env.Client.Create(t.Context(), node); err != nil {
			t.Fatal(err)
		}
	}

	out, code := runCLI(t, "", "score", "--kubeconfig", env.Kubeconfig)
	want := []string{
		`^NODE +SCORE +TIER +GPUS$`,
		`^gpu-bronze +40\.5 +bronze +GPU-2222=40\.5,GPU-1111=88\.0$`,
		`^gpu-silver +81\.9 +silver +GPU-3333=81\.9$`,
		`^gpu-gold +95\.0 +gold +-$`,
		`^cpu-new +- +- +-$`,
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if code != 0 || len(lines) != len(want) {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	for i, re := range want {
		if !regexp.MustCompile(re).MatchString(lines[i]) {
			t.Errorf("line %d %q does not match %s", i, lines[i], re)
		}
	}

	out, code = runCLI(t, "", "score", "--kubeconfig", env.Kubeconfig, "--node", "gpu-bronze", "-o", "json")
	var got []nodeScore
	if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil {
		t.Fatalf("exit %d %v:\n%s", code, err, out)
	}
	score := 40.5
	wantJSON := []nodeScore{{Node: "gpu-bronze", Score: &score, ScoreText: "40.5", Tier: "bronze",
		GPUs: []gpuScore{{UUID: "GPU-2222", Score: 40.5}, {UUID: "GPU-1111", Score: 88}}}}
	if diff := cmp.Diff(wantJSON, got); diff != "" {
		t.Errorf("json (-want +got):\n%s", diff)
	}

	out, code = runCLI(t, "", "score", "--kubeconfig", env.Kubeconfig, "--node", "gpu-missing")
	if code == 0 || !strings.Contains(out, "gpu-missing") {
		t.Errorf("missing node: exit %d %q", code, out)
	}
}

func TestParseGPUScores(t *testing.T) {
	tests := []struct {
		in   string
		want []gpuScore
	}{
		{"", nil},
		{"not json", nil},
		{`{"GPU-b":"70.0","GPU-a":70,"GPU-c":"x","GPU-d":"NaN"}`, []gpuScore{{"GPU-a", 70}, {"GPU-b", 70}}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, parseGPUScores(tt.in)); diff != "" {
			t.Errorf("%q (-want +got):\n%s", tt.in, diff)
		}
	}
}
