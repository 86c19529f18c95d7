package analyzer

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	fakeclock "k8s.io/utils/clock/testing"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/finding"
)

// TestLatched: Xid 79 survives any clearAfter and clears on a new boot id
// only; a reset-gpu Xid clears 30 minutes after its last occurrence.
func TestLatched(t *testing.T) {
	clk := fakeclock.NewFakeClock(t0)
	e := NewEngine(DefaultRuleSet(), clk)
	e.Reboot("boot-a")
	cool := func() Result { return e.Evaluate(snapOf(clk.Now(), 40, 40, 40), nil) }
	res := e.Evaluate(snapOf(t0, 40, 40, 40), []finding.Finding{
		xidFinding(79, 1, t0, finding.Fatal, finding.ActionReboot),
		xidFinding(48, 2, t0, finding.Fatal, finding.ActionResetGPU),
	})
	if diff := cmp.Diff([]string{"xid-fatal-reboot/1", "xid-fatal/2"}, active(res)); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	clk.Step(29 * time.Minute)
	if got := active(cool()); len(got) != 2 {
		t.Fatalf("at 29m: %v", got)
	}
	clk.Step(time.Minute)
	if diff := cmp.Diff([]string{"xid-fatal-reboot/1"}, active(cool())); diff != "" {
		t.Fatalf("at 30m (-want +got):\n%s", diff)
	}
	clk.Step(48 * time.Hour)
	res = cool()
	if p := problem(t, res, "xid-fatal-reboot"); !p.Latched || p.Reason != "NvidiaXID79Error" || !p.Since.Equal(t0) {
		t.Fatalf("after 48h: %+v", p)
	}
	e.Reboot("boot-a") // the same boot: nothing changes
	if got := active(cool()); len(got) != 1 {
		t.Fatalf("same boot id cleared the latch: %v", got)
	}
	e.Reboot("boot-b")
	res = cool()
	if got := active(res); len(got) != 0 {
		t.Fatalf("after reboot: %v", got)
	}
	if c := condition(t, res, v1alpha1.ConditionGPUHealAcceleratorHealthy); c.Status != StatusTrue || !c.LastTransitionTime.Equal(clk.Now()) {
		t.Errorf("condition after reboot: %+v", c)
	}
}

// TestOldFindings: a finding older than clearAfter (read late, e.g. at
// agent start) is not a current problem, unless its rule latches.
func TestOldFindings(t *testing.T) {
	clk := fakeclock.NewFakeClock(t0)
	e := NewEngine(DefaultRuleSet(), clk)
	old := t0.Add(-2 * time.Hour)
	res := e.Evaluate(snapOf(t0, 40, 40), []finding.Finding{
		xidFinding(79, 0, old, finding.Fatal, finding.ActionReboot),
		xidFinding(48, 1, old, finding.Fatal, finding.ActionResetGPU),
	})
	if diff := cmp.Diff([]string{"xid-fatal-reboot/0"}, active(res)); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	if p := res.Problems[0]; !p.Since.Equal(old) {
		t.Errorf("Since = %v, want the finding's time %v", p.Since, old)
	}
}

// TestNilSnapshot: no reading is not a healthy reading. GPU rules keep
// their problems while the backend is down; node rules see available.
func TestNilSnapshot(t *testing.T) {
	s := newStepper(t, testRules)
	s.at(0, []float64{40, -1})
	for _, d := range []time.Duration{time.Minute, time.Hour} {
		s.clk.SetTime(t0.Add(d))
		res := s.eng.Evaluate(nil, nil)
		if diff := cmp.Diff([]string{"dead/1"}, active(res)); diff != "" {
			t.Fatalf("at %v (-want +got):\n%s", d, diff)
		}
	}
	if got := active(s.at(2*time.Hour, []float64{40, 40})); len(got) != 0 {
		t.Fatalf("back: %v", got)
	}
}

func TestEvaluationErrors(t *testing.T) {
	rules := `
rules:
- name: no-has
  expr: gpu.ecc.volatileUncorrected > 0
  severity: fatal
  condition: AcceleratedHardwareReady
  reason: NoHas
`
	e := NewEngine(mustLoad(t, rules), fakeclock.NewFakeClock(t0))
	res := e.Evaluate(snapOf(t0, 40, 40, 40), nil)
	if len(res.Problems) != 0 {
		t.Errorf("a failing rule must not hold: %v", active(res))
	}
	if len(res.Errors) != 2 {
		t.Fatalf("errors = %v, want one and a count", res.Errors)
	}
	var re *RuleError
	if !errors.As(res.Errors[0], &re) || re.Rule != "no-has" || re.GPU == nil || !strings.Contains(re.Error(), "no such key") {
		t.Errorf("error = %v", res.Errors[0])
	}
	if !strings.Contains(res.Errors[1].Error(), "2 more") {
		t.Errorf("summary = %v", res.Errors[1])
	}
}

// TestReloadKeepsState: a reload keeps the clock of a rule that keeps its
// name (and scope); a renamed rule starts over.
func TestReloadKeepsState(t *testing.T) {
	s := newStepper(t, testRules)
	s.at(0, []float64{91})
	s.at(3*time.Minute, []float64{91})
	renamed := strings.Replace(testRules, "name: hot\n", "name: hot\n  # edited\n", 1) +
		strings.Replace(strings.Split(testRules, "- name: flappy")[0], "name: hot", "name: hot-copy", 1)[len("\nrules:\n"):]
	s.eng.SetRuleSet(mustLoad(t, renamed))
	res := s.at(5*time.Minute, []float64{91})
	if diff := cmp.Diff([]string{"hot/0", "warm/0"}, active(res)); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	if got := active(s.at(9*time.Minute, []float64{91})); !cmp.Equal(got, []string{"hot/0", "warm/0"}) {
		t.Fatalf("hot-copy first held at 5m: %v", got)
	}
	if got := active(s.at(10*time.Minute, []float64{91})); !cmp.Equal(got, []string{"hot-copy/0", "hot/0", "warm/0"}) {
		t.Fatalf("hot-copy must wait its own 5m: %v", got)
	}
}

func TestReset(t *testing.T) {
	s := newStepper(t, testRules)
	s.at(0, []float64{-1})
	s.eng.Reset()
	// The GPU is still missing: the rule fires again at once.
	if got := active(s.at(time.Minute, []float64{-1})); !cmp.Equal(got, []string{"dead/0"}) {
		t.Fatalf("after Reset: %v", got)
	}
}
