//go:build integration

package remediation

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/testenv"
	"github.com/gpuheal/gpuheal/internal/testenv/testcluster"
)

// TestCRDValidationSpec: the shipped CRD defaults a check's timeout to 15m
// and its CEL rules refuse a bad health gate with their message.
func TestCRDValidationSpec(t *testing.T) {
	t.Parallel()
	env := testcluster.Start(t, testenv.Options{Scheme: testScheme(t)})
	c := env.Client
	gate := func(name string, checks ...v1alpha1.ValidationCheck) *v1alpha1.RemediationPolicy {
		return &v1alpha1.RemediationPolicy{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: v1alpha1.RemediationPolicySpec{Validation: &v1alpha1.ValidationSpec{Checks: checks}}}
	}
	good := gate("good", agentCheck(), dcgmCheck())
	if err := c.Create(t.Context(), good); err != nil {
		t.Fatal(err)
	}
	if to := good.Spec.Validation.Checks[0].Timeout; to == nil || to.Duration != 15*time.Minute {
		t.Errorf("timeout defaulted to %v, want 15m", to)
	}
	for _, tc := range []struct {
		name   string
		checks []v1alpha1.ValidationCheck
		says   string
	}{
		{"dup", []v1alpha1.ValidationCheck{agentCheck(), agentCheck()}, "checks: each name at most once"},
		{"no-level", []v1alpha1.ValidationCheck{{Name: "dcgm", Kind: v1alpha1.CheckDCGM}}, "checks: a DCGM check needs a level from 1 to 4"},
		{"no-floors", []v1alpha1.ValidationCheck{{Name: "nccl", Kind: v1alpha1.CheckNCCL}}, "checks: an NCCL or NVBandwidth check needs floors"},
		{"agent-checks-on-dcgm", []v1alpha1.ValidationCheck{{Name: "dcgm", Kind: v1alpha1.CheckDCGM, Level: 1, AgentChecks: []string{v1alpha1.AgentCheckNVLinksUp}}}, "checks: agentChecks belong to kind Agent only"},
		{"short-timeout", []v1alpha1.ValidationCheck{{Name: "agent", Kind: v1alpha1.CheckAgent, Timeout: &metav1.Duration{Duration: time.Second}}}, "must be a duration from 10s to 6h"},
		{"bad-name", []v1alpha1.ValidationCheck{{Name: "Bad_Name", Kind: v1alpha1.CheckAgent}}, "spec.validation.checks[0].name"},
	} {
		err := c.Create(t.Context(), gate(tc.name, tc.checks...))
		if err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: error %v, want one saying %q", tc.name, err, tc.says)
		}
	}
}
