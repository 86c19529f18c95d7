package remediation

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/provider"
	"github.com/gpuheal/gpuheal/internal/score"
)

// What the unit tests on a fake clock and the integration tests on a real
// API server share.

const gpuCondition = v1alpha1.ConditionGPUHealAcceleratorHealthy

// xidMessage is an agent's condition message naming one GPU.
const xidMessage = "GPU 3 (GPU-5a3f2e1b-8c4d-4e6f-9a0b-1c2d3e4f5a6b, 0000:3b:00.0) fell off the bus"

func testScheme(t testing.TB) *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// fastPolicy reacts within a second or two, for tests on a real clock.
func fastPolicy(name string) *v1alpha1.RemediationPolicy {
	sec := metav1.Duration{Duration: time.Second}
	hundred := intstr.FromString("100%")
	return &v1alpha1.RemediationPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.RemediationPolicySpec{
			NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{v1alpha1.LabelNvidiaGPUPresent: "true"}},
			UnhealthyConditions: []v1alpha1.UnhealthyCondition{
				{Type: gpuCondition, Status: metav1.ConditionFalse, For: sec},
			},
			Escalation: v1alpha1.Escalation{
				RebootsBeforeReplace: 2, Window: &metav1.Duration{Duration: time.Hour},
				RebootTimeout: &metav1.Duration{Duration: 20 * time.Second}, ReplaceTimeout: &metav1.Duration{Duration: time.Minute},
			},
			MaxUnhealthy: &hundred,
			Drain:        v1alpha1.DrainSpec{Timeout: &metav1.Duration{Duration: 30 * time.Second}},
			Provider:     provider.Kwok,
			RecoveryHold: &sec,
		},
	}
}

// adviceAnnotation is the agent's recommended-actions annotation advising
// action for the GPU condition.
func adviceAnnotation(action string) string {
	b, _ := json.Marshal(map[string]string{gpuCondition: action})
	return string(b)
}

func phasesOf(nr v1alpha1.NodeRemediation) []v1alpha1.Phase {
	var out []v1alpha1.Phase
	for _, p := range nr.Status.Phases {
		out = append(out, p.Phase)
	}
	return out
}

func clientKey(name string) client.ObjectKey { return client.ObjectKey{Name: name} }

func testScorer(t testing.TB) *score.Scorer {
	s, err := score.New(score.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func sameSet(a, b []string) bool {
	seen := map[string]int{}
	for _, s := range a {
		seen[s]++
	}
	for _, s := range b {
		seen[s]--
	}
	for _, n := range seen {
		if n != 0 {
			return false
		}
	}
	return true
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
