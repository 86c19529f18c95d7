//go:build integration

package remediation

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"k8s.io/utils/ptr"

	"sigs.k8s.io/yaml"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/score/tieraffinity/tieraffinitytest"
	"github.com/gpuheal/gpuheal/internal/testenv"
	"github.com/gpuheal/gpuheal/internal/testenv/testcluster"
)

// TestCRDSchemaDefaultsAndValidation installs the shipped CRDs in the real
// API server: an empty policy gets the documented defaults, and the CEL
// rules reject bad values with a message naming the field.
func TestCRDSchemaDefaultsAndValidation(t *testing.T) {
	t.Parallel()
	env := testcluster.Start(t, testenv.Options{Scheme: testScheme(t)})
	c := env.Client
	p := &v1alpha1.RemediationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "defaults"}}
	if err := c.Create(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	s := p.Spec
	if len(s.UnhealthyConditions) != 3 || s.UnhealthyConditions[0].Type != v1alpha1.ConditionGPUHealAcceleratorHealthy || s.UnhealthyConditions[0].For.Duration.String() != "2m0s" {
		t.Errorf("unhealthyConditions defaulted to %+v", s.UnhealthyConditions)
	}
	if s.MaxUnhealthy.String() != "20%" || s.MaxParallel.String() != "1" {
		t.Errorf("maxUnhealthy %s maxParallel %s, want 20%% and 1", s.MaxUnhealthy.String(), s.MaxParallel.String())
	}
	if s.Drain.Timeout == nil || s.Drain.Timeout.Duration.String() != "10m0s" || s.Drain.OnTimeout != v1alpha1.DrainWait || !*s.Drain.DeleteEmptyDirData {
		t.Errorf("drain defaulted to %+v", s.Drain)
	}
	if s.Escalation.RebootsBeforeReplace != 2 || s.Escalation.Window.Duration.String() != "24h0m0s" {
		t.Errorf("escalation defaulted to %+v", s.Escalation)
	}
	if s.Lemon.Incidents == nil || *s.Lemon.Incidents != 3 || s.Lemon.Window == nil || s.Lemon.Window.Duration.String() != "720h0m0s" || s.Lemon.Action != v1alpha1.LemonReplace {
		t.Errorf("lemon defaulted to %+v", s.Lemon)
	}

	bad := func(name string, mutate func(*v1alpha1.RemediationPolicy), wantField string) {
		t.Helper()
		p := &v1alpha1.RemediationPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}}
		mutate(p)
		err := c.Create(t.Context(), p)
		if err == nil || !strings.Contains(err.Error(), wantField) {
			t.Errorf("%s: error %v, want one naming %s", name, err, wantField)
		}
	}
	bad("pct", func(p *v1alpha1.RemediationPolicy) { v := intstr.FromString("120%"); p.Spec.MaxUnhealthy = &v }, "spec.maxUnhealthy")
	bad("zero-parallel", func(p *v1alpha1.RemediationPolicy) { v := intstr.FromInt32(0); p.Spec.MaxParallel = &v }, "spec.maxParallel")
	bad("dup", func(p *v1alpha1.RemediationPolicy) {
		uc := v1alpha1.UnhealthyCondition{Type: "Ready", Status: "False", For: metav1.Duration{}}
		p.Spec.UnhealthyConditions = []v1alpha1.UnhealthyCondition{uc, uc}
	}, "each type and status at most once")
	bad("neg", func(p *v1alpha1.RemediationPolicy) { p.Spec.Drain.Timeout = &metav1.Duration{Duration: -1} }, "spec.drain.timeout")
	bad("provider", func(p *v1alpha1.RemediationPolicy) { p.Spec.Provider = "gcp" }, "spec.provider")
	bad("lemon-one", func(p *v1alpha1.RemediationPolicy) { p.Spec.Lemon.Incidents = ptr.To[int32](1) }, "incidents: 0 (off) or at least 2")
	bad("lemon-action", func(p *v1alpha1.RemediationPolicy) { p.Spec.Lemon.Action = "Reboot" }, "spec.lemon.action")

	nr := &v1alpha1.NodeRemediation{
		ObjectMeta: metav1.ObjectMeta{Name: "n-1"},
		Spec:       v1alpha1.NodeRemediationSpec{NodeName: "n", PolicyName: "defaults", Trigger: v1alpha1.Trigger{Type: "Ready", Status: "False", Since: metav1.Now()}},
	}
	if err := c.Create(t.Context(), nr); err != nil {
		t.Fatal(err)
	}
	nr.Spec.NodeName = "other"
	if err := c.Update(t.Context(), nr); err == nil || !strings.Contains(err.Error(), "nodeName is immutable") {
		t.Errorf("changing nodeName: error %v, want immutable", err)
	}
}

// The lemon rule's policy in docs/health-score.md is one the real API
// server takes, with the values the page says.
func TestDocLemonPolicyIsAccepted(t *testing.T) {
	t.Parallel()
	env := testcluster.Start(t, testenv.Options{Scheme: testScheme(t)})
	blocks, err := tieraffinitytest.DocBlocks(testcluster.RepoRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	var found *v1alpha1.RemediationPolicy
	for _, b := range blocks {
		var p v1alpha1.RemediationPolicy
		if yaml.Unmarshal(b, &p) == nil && p.Kind == "RemediationPolicy" {
			if err := yaml.UnmarshalStrict(b, &p); err != nil {
				t.Fatalf("the page's policy: %v", err)
			}
			found = &p
		}
	}
	if found == nil {
		t.Fatal("no RemediationPolicy on the page")
	}
	if err := env.Client.Create(t.Context(), found); err != nil {
		t.Fatalf("the API server refused the page's policy: %v", err)
	}
	l := found.Spec.Lemon
	if l.Incidents == nil || *l.Incidents != 3 || l.Window.Duration != 720*time.Hour || l.Action != v1alpha1.LemonReplace {
		t.Errorf("the page's lemon rule %+v", l)
	}
}
