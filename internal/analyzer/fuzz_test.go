package analyzer

import (
	"testing"
	"time"

	fakeclock "k8s.io/utils/clock/testing"

	"github.com/gpuheal/gpuheal/internal/finding"
)

// FuzzLoad: no config file, however broken, may panic the agent; one
// that loads must also evaluate without panicking.
func FuzzLoad(f *testing.F) {
	f.Add(DefaultRulesYAML())
	f.Add([]byte(testRules))
	f.Add([]byte("rules: []\nxid:\n  13: {severity: fatal, count: 5, window: 10m}\n"))
	f.Add([]byte("rules:\n- {name: a, scope: finding, expr: 'finding.xid == 13', count: {times: 2, window: 1m}, severity: fatal, condition: KernelReady, reason: 'X{{.Finding.Xid}}', message: '{{.GPU.Index}}'}\n"))
	f.Add([]byte("rules:\n- {name: a, expr: 'size(gpu.nvlink) > 0', value: 'gpu.nvlink', severity: warning, condition: AcceleratedHardwareReady, reason: A}\n"))
	f.Fuzz(func(_ *testing.T, data []byte) {
		rs, err := Load(data)
		if err != nil {
			return
		}
		clk := fakeclock.NewFakeClock(t0)
		e := NewEngine(rs, clk)
		fs := []finding.Finding{xidFinding(13, 0, t0, finding.Fatal, finding.ActionResetGPU),
			{Code: "SOFT_LOCKUP", Severity: finding.Warning, Action: finding.ActionNone}}
		e.Evaluate(snapOf(t0, 91, -1), fs)
		clk.Step(time.Minute)
		e.Evaluate(nil, fs)
	})
}
