package analyzer

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	fakeclock "k8s.io/utils/clock/testing"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/finding"
	"github.com/gpuheal/gpuheal/internal/gpu"
)

const testRules = `
rules:
- name: hot
  expr: has(gpu.temperatureCelsius) && gpu.temperatureCelsius > 90
  value: gpu.temperatureCelsius
  for: 5m
  severity: fatal
  condition: AcceleratedHardwareReady
  reason: Hot
  message: "GPU {{.GPU.Index}} at {{.Value}} C"
  action: reset-gpu
- name: flappy
  expr: has(gpu.temperatureCelsius) && gpu.temperatureCelsius > 95
  clearAfter: 2m
  severity: fatal
  condition: AcceleratedHardwareReady
  reason: Flappy
  action: reset-gpu
- name: dead
  expr: gpu.missing
  severity: fatal
  condition: AcceleratedHardwareReady
  reason: Dead
  action: reboot
- name: warm
  expr: has(gpu.temperatureCelsius) && gpu.temperatureCelsius > 80
  severity: warning
  condition: AcceleratedHardwareReady
  reason: Warm
- name: xid13-burst
  scope: finding
  expr: finding.xid == 13
  count: {times: 3, window: 10m}
  severity: fatal
  condition: AcceleratedHardwareReady
  reason: Xid13Burst
  clearAfter: 5m
`

// snapOf builds a node of len(temps) GPUs; a negative temperature marks
// the GPU missing.
func snapOf(at time.Time, temps ...float64) *gpu.NodeSnapshot {
	s := &gpu.NodeSnapshot{Time: at, Backend: "test", ExpectedGPUs: len(temps), FoundGPUs: len(temps)}
	for i, c := range temps {
		g := gpu.GPUSnapshot{Index: i, UUID: fmt.Sprintf("GPU-%d", i), PCIBusID: busOf(i), Name: "test"}
		if c < 0 {
			g.Missing = true
		} else {
			g.TemperatureCelsius = gpu.F64(c)
		}
		s.GPUs = append(s.GPUs, g)
	}
	return s
}

func busOf(i int) string { return fmt.Sprintf("0000:%02x:00.0", 0x10+i) }

// stepper evaluates hand-made snapshots on a fake clock.
type stepper struct {
	t   *testing.T
	clk *fakeclock.FakeClock
	eng *Engine
}

func newStepper(t *testing.T, rules string) *stepper {
	clk := fakeclock.NewFakeClock(t0)
	return &stepper{t: t, clk: clk, eng: NewEngine(mustLoad(t, rules), clk)}
}

// at sets the clock to t0+d and evaluates.
func (s *stepper) at(d time.Duration, temps []float64, fs ...finding.Finding) Result {
	s.t.Helper()
	s.clk.SetTime(t0.Add(d))
	res := s.eng.Evaluate(snapOf(s.clk.Now(), temps...), fs)
	for _, err := range res.Errors {
		s.t.Errorf("at %v: evaluation error: %v", d, err)
	}
	return res
}

func TestFor(t *testing.T) {
	s := newStepper(t, testRules)
	hot := []float64{91, 40}
	cold := []float64{40, 40}
	for _, step := range []struct {
		d      time.Duration
		temps  []float64
		active bool
	}{
		{0, hot, false},
		{4*time.Minute + 59*time.Second, hot, false},
		{5 * time.Minute, hot, true},
		{5*time.Minute + 30*time.Second, cold, false}, // clearAfter 0: clears at once
		{6 * time.Minute, hot, false},                 // For starts over
		{10*time.Minute + 59*time.Second, hot, false},
		{11 * time.Minute, hot, true},
	} {
		res := s.at(step.d, step.temps)
		_, got := find(res, "hot")
		if got != step.active {
			t.Fatalf("at %v: hot active = %v, want %v (%v)", step.d, got, step.active, active(res))
		}
		if got {
			p, _ := find(res, "hot")
			if want := "GPU 0 at 91 C"; p.Message != want || p.Reason != "Hot" || p.GPU.PCIBusID != busOf(0) {
				t.Errorf("problem = %+v, want message %q", p, want)
			}
			if !p.Since.Equal(s.clk.Now()) {
				t.Errorf("Since = %v, want %v", p.Since, s.clk.Now())
			}
		}
	}
}

func find(res Result, rule string) (Problem, bool) {
	for _, p := range res.Problems {
		if p.Rule == rule {
			return p, true
		}
	}
	return Problem{}, false
}

// TestClearAfterDampsFlaps: a problem that comes and goes within
// clearAfter keeps the condition False with its first transition time.
func TestClearAfterDampsFlaps(t *testing.T) {
	s := newStepper(t, testRules)
	spike, calm := []float64{96}, []float64{85}
	steps := []struct {
		d      time.Duration
		temps  []float64
		status string
		ltt    time.Duration
	}{
		{0, calm, StatusTrue, 0},
		{time.Minute, spike, StatusFalse, time.Minute},
		{2 * time.Minute, calm, StatusFalse, time.Minute},
		{3 * time.Minute, spike, StatusFalse, time.Minute},
		{4 * time.Minute, calm, StatusFalse, time.Minute},
		{4*time.Minute + 59*time.Second, calm, StatusFalse, time.Minute},
		{5 * time.Minute, calm, StatusTrue, 5 * time.Minute}, // 2m after the last spike
	}
	for _, st := range steps {
		res := s.at(st.d, st.temps)
		c := condition(t, res, v1alpha1.ConditionGPUHealAcceleratorHealthy)
		if c.Status != st.status || !c.LastTransitionTime.Equal(t0.Add(st.ltt)) {
			t.Fatalf("at %v: condition %s since %v, want %s since %v", st.d, c.Status, c.LastTransitionTime.Sub(t0), st.status, st.ltt)
		}
		if p, ok := find(res, "flappy"); ok && !p.Since.Equal(t0.Add(time.Minute)) {
			t.Errorf("at %v: flappy Since = %v, want 1m", st.d, p.Since.Sub(t0))
		}
	}
}

// TestLastTransitionTime: a second, worse problem on an unhealthy node
// takes over reason and message but never resets the transition time.
func TestLastTransitionTime(t *testing.T) {
	s := newStepper(t, testRules)
	s.at(0, []float64{91, 40})
	res := s.at(5*time.Minute, []float64{91, 40})
	want := ConditionStatus{Type: v1alpha1.ConditionGPUHealAcceleratorHealthy, Status: StatusFalse, Reason: "Hot",
		Message: "GPU 0 at 91 C", Action: finding.ActionResetGPU, LastTransitionTime: t0.Add(5 * time.Minute)}
	if diff := cmp.Diff(want, condition(t, res, v1alpha1.ConditionGPUHealAcceleratorHealthy)); diff != "" {
		t.Fatalf("one problem (-want +got):\n%s", diff)
	}
	res = s.at(7*time.Minute, []float64{91, -1})
	c := condition(t, res, v1alpha1.ConditionGPUHealAcceleratorHealthy)
	if c.Reason != "Dead" || c.Action != finding.ActionReboot || !c.LastTransitionTime.Equal(t0.Add(5*time.Minute)) ||
		!strings.Contains(c.Message, "and 1 more fatal problem") {
		t.Fatalf("second problem: %+v", c)
	}
	res = s.at(8*time.Minute, []float64{85, 40})
	want = ConditionStatus{Type: v1alpha1.ConditionGPUHealAcceleratorHealthy, Status: StatusTrue, Reason: "GPUHealAcceleratorIsHealthy",
		Message: "gpuheal found no fatal problem", Action: finding.ActionNone, LastTransitionTime: t0.Add(8 * time.Minute)}
	if diff := cmp.Diff(want, condition(t, res, v1alpha1.ConditionGPUHealAcceleratorHealthy)); diff != "" {
		t.Fatalf("healthy again (-want +got):\n%s", diff)
	}
	// A warning alone is an Event, not a condition.
	if got := active(res); !cmp.Equal(got, []string{"warm/0"}) {
		t.Errorf("active = %v, want [warm/0]", got)
	}
}

func xidFinding(code uint64, gpuIndex int, at time.Time, sev finding.Severity, act finding.Action) finding.Finding {
	return finding.Finding{Source: "kmsg", Code: fmt.Sprintf("XID%d", code), Xid: code, GPU: busOf(gpuIndex),
		Severity: sev, Action: act, Time: at, Message: fmt.Sprintf("NVRM: Xid (PCI:%s): %d, test", busOf(gpuIndex), code)}
}

func TestCountWindow(t *testing.T) {
	s := newStepper(t, testRules)
	cool := []float64{40, 40}
	x13 := func(g int, d time.Duration) finding.Finding {
		return xidFinding(13, g, t0.Add(d), finding.Warning, finding.ActionRestartApp)
	}
	steps := []struct {
		d      time.Duration
		fs     []finding.Finding
		active []string
	}{
		{0, []finding.Finding{x13(0, 0)}, nil},
		{4 * time.Minute, []finding.Finding{x13(0, 4*time.Minute), x13(1, 4*time.Minute)}, nil},
		{8 * time.Minute, []finding.Finding{x13(0, 8*time.Minute)}, []string{"xid13-burst/0"}},
		{12 * time.Minute, nil, []string{"xid13-burst/0"}},
		{13 * time.Minute, nil, nil}, // clearAfter 5m after the third
		// Spread out: never three within 10 minutes.
		{20 * time.Minute, []finding.Finding{x13(1, 20*time.Minute)}, nil},
		{29 * time.Minute, []finding.Finding{x13(1, 29*time.Minute)}, nil},
		{38 * time.Minute, []finding.Finding{x13(1, 38*time.Minute)}, nil},
	}
	for _, st := range steps {
		res := s.at(st.d, cool, st.fs...)
		if diff := cmp.Diff(st.active, active(res)); diff != "" {
			t.Fatalf("at %v (-want +got):\n%s", st.d, diff)
		}
		if len(st.active) > 0 {
			p := res.Problems[0]
			if !p.Since.Equal(t0.Add(8*time.Minute)) || p.Code != "XID13" || p.GPU.Index != 0 || p.Reason != "Xid13Burst" {
				t.Errorf("problem = %+v", p)
			}
		}
	}
}

// TestDefaultFindingRules runs detector-shaped findings through the
// default rules.
func TestDefaultFindingRules(t *testing.T) {
	tests := []struct {
		name      string
		fs        func(now time.Time) []finding.Finding
		rule      string
		reason    string
		sev       finding.Severity
		action    finding.Action
		cond      string
		condFalse bool
		latched   bool
	}{
		{"xid 79", one(xidFinding(79, 2, time.Time{}, finding.Fatal, finding.ActionReboot)),
			"xid-fatal-reboot", "NvidiaXID79Error", finding.Fatal, finding.ActionReboot, v1alpha1.ConditionGPUHealAcceleratorHealthy, true, true},
		{"xid 48", one(xidFinding(48, 2, time.Time{}, finding.Fatal, finding.ActionResetGPU)),
			"xid-fatal", "NvidiaXID48Error", finding.Fatal, finding.ActionResetGPU, v1alpha1.ConditionGPUHealAcceleratorHealthy, true, false},
		{"xid 13 escalated by the catalog threshold", one(xidFinding(13, 2, time.Time{}, finding.Fatal, finding.ActionResetGPU)),
			"xid-fatal", "NvidiaXID13Error", finding.Fatal, finding.ActionResetGPU, v1alpha1.ConditionGPUHealAcceleratorHealthy, true, false},
		{"xid 13", one(xidFinding(13, 2, time.Time{}, finding.Warning, finding.ActionRestartApp)),
			"xid-warning", "NvidiaXID13Warning", finding.Warning, finding.ActionRestartApp, v1alpha1.ConditionGPUHealAcceleratorHealthy, false, false},
		{"fell off the bus", one(finding.Finding{Code: "GPU_FELL_OFF_BUS", GPU: busOf(1), Severity: finding.Fatal, Action: finding.ActionReboot}),
			"gpu-fell-off-bus", "NvidiaGPUMissing", finding.Fatal, finding.ActionReboot, v1alpha1.ConditionGPUHealAcceleratorHealthy, true, true},
		{"soft lockup", one(finding.Finding{Code: "SOFT_LOCKUP", Severity: finding.Warning, Action: finding.ActionNone, Message: "watchdog: BUG: soft lockup"}),
			"soft-lockup", "SoftLockup", finding.Warning, finding.ActionNone, v1alpha1.ConditionGPUHealKernelHealthy, false, false},
		{"soft lockups", repeat(3, finding.Finding{Code: "SOFT_LOCKUP", Severity: finding.Warning, Action: finding.ActionNone, Message: "watchdog: BUG: soft lockup"}),
			"soft-lockup-repeated", "SoftLockup", finding.Fatal, finding.ActionReboot, v1alpha1.ConditionGPUHealKernelHealthy, true, false},
		{"hung task", one(finding.Finding{Code: "HUNG_TASK", Severity: finding.Warning, Action: finding.ActionNone, Message: "INFO: task x:1 blocked"}),
			"hung-task", "HungTask", finding.Warning, finding.ActionNone, v1alpha1.ConditionGPUHealKernelHealthy, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := fakeclock.NewFakeClock(t0)
			e := NewEngine(DefaultRuleSet(), clk)
			res := e.Evaluate(snapOf(t0, 40, 40, 40), tt.fs(t0))
			p := problem(t, res, tt.rule)
			if p.Reason != tt.reason || p.Severity != tt.sev || p.Action != tt.action || p.Condition != tt.cond || p.Latched != tt.latched || !p.Since.Equal(t0) {
				t.Errorf("problem = %+v", p)
			}
			if c := condition(t, res, tt.cond); (c.Status == StatusFalse) != tt.condFalse {
				t.Errorf("condition = %+v, want False: %v", c, tt.condFalse)
			}
		})
	}
}

func one(f finding.Finding) func(time.Time) []finding.Finding {
	return func(now time.Time) []finding.Finding { f.Time = now; return []finding.Finding{f} }
}

func repeat(n int, f finding.Finding) func(time.Time) []finding.Finding {
	return func(now time.Time) []finding.Finding {
		var out []finding.Finding
		for i := range n {
			f.Time = now.Add(time.Duration(i-n+1) * time.Second) // the last one now
			out = append(out, f)
		}
		return out
	}
}
