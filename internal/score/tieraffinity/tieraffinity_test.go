package tieraffinity_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/gpuheal/gpuheal/internal/score/tieraffinity"
	"github.com/gpuheal/gpuheal/internal/score/tieraffinity/tieraffinitytest"
)

// TestDocAffinities: the affinities docs/health-score.md shows are the
// ones the code builds (and the demo and soak use), and the page's YAML
// reads as Pods.
func TestDocAffinities(t *testing.T) {
	pods, err := tieraffinitytest.DocPods("../../..")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]*corev1.Affinity{
		tieraffinitytest.GoldOrSilverPod:    tieraffinity.GoldOrSilverOnly(),
		tieraffinitytest.PreferHealthierPod: tieraffinity.PreferHealthier(),
	} {
		p := pods[name]
		if p == nil {
			t.Errorf("docs: no pod %s (have %d pods)", name, len(pods))
			continue
		}
		if d := cmp.Diff(want, p.Spec.Affinity); d != "" {
			t.Errorf("docs: pod %s's affinity differs from the code's (-code +docs):\n%s", name, d)
		}
	}
	if len(pods) != 2 {
		t.Errorf("docs: %d pods, want the two the scheduler test runs", len(pods))
	}
}

func TestBronzeTaint(t *testing.T) {
	b := tieraffinity.BronzeTaint()
	if b.ToString() != "gpuheal.io/health-tier=bronze:PreferNoSchedule" {
		t.Errorf("taint %s", b.ToString())
	}
	if !tieraffinity.IsBronzeTaint(b) || tieraffinity.IsBronzeTaint(corev1.Taint{Key: "gpuheal.io/unhealthy", Effect: corev1.TaintEffectNoSchedule}) {
		t.Error("IsBronzeTaint does not tell the tier taint from another")
	}
}
