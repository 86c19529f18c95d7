package analyzer

import (
	"testing"

	fakeclock "k8s.io/utils/clock/testing"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/finding"
)

// ForgetGPU drops the problems of one GPU, latched ones too, and leaves
// the other GPUs' alone: after a verified reset the GPU condition clears
// at the next evaluation instead of after the rule's clearAfter.
func TestForgetGPU(t *testing.T) {
	clk := fakeclock.NewFakeClock(t0)
	e := NewEngine(DefaultRuleSet(), clk)
	res := e.Evaluate(snapOf(t0, 40, 40, 40), []finding.Finding{
		xidFinding(48, 2, t0, finding.Fatal, finding.ActionResetGPU),
		xidFinding(79, 1, t0, finding.Fatal, finding.ActionReboot), // latched
	})
	if c := condition(t, res, v1alpha1.ConditionGPUHealAcceleratorHealthy); c.Status != StatusFalse {
		t.Fatalf("condition %+v before, want False", c)
	}
	e.ForgetGPU(busOf(2))
	res = e.Evaluate(snapOf(t0, 40, 40, 40), nil)
	for _, p := range res.Problems {
		if p.GPU != nil && p.GPU.PCIBusID == busOf(2) {
			t.Errorf("problem of the forgotten GPU left: %+v", p)
		}
	}
	problem(t, res, "xid-fatal-reboot") // GPU 1's latched Xid 79 stays
	e.ForgetGPU(busOf(1))
	res = e.Evaluate(snapOf(t0, 40, 40, 40), nil)
	if c := condition(t, res, v1alpha1.ConditionGPUHealAcceleratorHealthy); c.Status != StatusTrue {
		t.Errorf("condition %+v with every GPU forgotten, want True", c)
	}
}
