package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gpuhealv1 "github.com/gpuheal/gpuheal/api/v1alpha1"
)

func TestScore(t *testing.T) {
	var objs []client.Object
	for _, n := range scoreNodes() {
		objs = append(objs, n)
	}
	checkScore(t, fakeRunner(t, fakeCluster(t, objs...)))
}

// scoreNodes: three scored nodes (two with per-GPU scores), one not yet.
func scoreNodes() []*corev1.Node {
	var out []*corev1.Node
	for _, n := range []struct {
		name, score, tier, gpus string
	}{
		{"gpu-gold", "95.0", "gold", ""},
		{"gpu-bronze", "40.5", "bronze", `{"GPU-1111":"88.0","GPU-2222":"40.5"}`},
		{"gpu-silver", "81.9", "silver", `{"GPU-3333":"81.9"}`},
		{"cpu-new", "", "", ""},
	} {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name, Labels: map[string]string{}, Annotations: map[string]string{}}}
		if n.score != "" {
			node.Annotations[gpuhealv1.AnnotationHealthScore] = n.score
			node.Labels[gpuhealv1.LabelHealthTier] = n.tier
		}
		if n.gpus != "" {
			node.Annotations[gpuhealv1.AnnotationGPUHealthScores] = n.gpus
		}
		out = append(out, node)
	}
	return out
}

// checkScore runs `gpuheal score` on scoreNodes.
func checkScore(t *testing.T, run runner) {
	t.Helper()
	out, code := run("score")
	matchLines(t, out, code,
		`^NODE +SCORE +TIER +GPUS$`,
		`^gpu-bronze +40\.5 +bronze +GPU-2222=40\.5,GPU-1111=88\.0$`,
		`^gpu-silver +81\.9 +silver +GPU-3333=81\.9$`,
		`^gpu-gold +95\.0 +gold +-$`,
		`^cpu-new +- +- +-$`,
	)

	score := 40.5
	bronze := []nodeScore{{Node: "gpu-bronze", Score: &score, ScoreText: "40.5", Tier: "bronze",
		GPUs: []gpuScore{{UUID: "GPU-2222", Score: 40.5}, {UUID: "GPU-1111", Score: 88}}}}
	// A NODE argument, and the hidden --node of old.
	for _, args := range [][]string{{"score", "gpu-bronze", "-o", "json"}, {"score", "--node", "gpu-bronze", "-o", "json"}} {
		out, code = run(args...)
		var got []nodeScore
		if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil {
			t.Fatalf("%v: exit %d %v:\n%s", args, code, err, out)
		}
		if diff := cmp.Diff(bronze, got); diff != "" {
			t.Errorf("%v (-want +got):\n%s", args, diff)
		}
	}
	out, code = run("score", "gpu-gold", "gpu-silver", "-o", "wide")
	matchLines(t, out, code, `^NODE +SCORE +TIER +GPUS$`, `^gpu-silver +81\.9 `, `^gpu-gold +95\.0 `)

	out, code = run("score", "gpu-missing")
	if code == 0 || !strings.Contains(out, "gpu-missing") {
		t.Errorf("missing node: exit %d %q", code, out)
	}
}

func TestParseGPUScores(t *testing.T) {
	t.Parallel()
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
