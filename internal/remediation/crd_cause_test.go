//go:build integration

package remediation

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/testenv"
	"github.com/gpuheal/gpuheal/internal/testenv/testcluster"
)

// TestCRDCorrelatedFaultsDefaultsAndValidation: the shipped CRD defaults
// correlatedFaults to 3 incidents of one cause per hour and refuses a
// limit below one or a window that is not positive, naming the field.
func TestCRDCorrelatedFaultsDefaultsAndValidation(t *testing.T) {
	env := testcluster.Start(t, testenv.Options{Scheme: testScheme(t)})
	c := env.Client
	p := &v1alpha1.RemediationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "defaults"}}
	if err := c.Create(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	cf := p.Spec.CorrelatedFaults
	if cf.MaxPerCause == nil || cf.MaxPerCause.String() != "3" || cf.Window == nil || cf.Window.Duration.String() != "1h0m0s" {
		t.Errorf("correlatedFaults defaulted to %+v, want maxPerCause 3 and window 1h", cf)
	}
	for name, mutate := range map[string]func(*v1alpha1.CorrelatedFaults){
		"zero":    func(f *v1alpha1.CorrelatedFaults) { v := intstr.FromInt32(0); f.MaxPerCause = &v },
		"pct":     func(f *v1alpha1.CorrelatedFaults) { v := intstr.FromString("150%"); f.MaxPerCause = &v },
		"window0": func(f *v1alpha1.CorrelatedFaults) { f.Window = &metav1.Duration{} },
	} {
		p := &v1alpha1.RemediationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "bad-" + name}}
		mutate(&p.Spec.CorrelatedFaults)
		err := c.Create(t.Context(), p)
		if err == nil || !strings.Contains(err.Error(), "spec.correlatedFaults") {
			t.Errorf("%s: error %v, want one naming spec.correlatedFaults", name, err)
		}
	}
}
