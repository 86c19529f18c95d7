package analyzer

import (
	"strings"
	"testing"

	"github.com/gpuheal/gpuheal/internal/finding"
)

const deviceRule = `
rules:
- name: cable-unplugged
  scope: finding
  expr: finding.code == "MLX5_CABLE_UNPLUGGED" && finding.device == "0000:41:00.1"
  severity: warning
  condition: AcceleratedHardwareReady
  reason: MellanoxCableUnplugged
  message: "adapter {{.Finding.Device}}: {{.Finding.Message}}"
`

// TestFindingDevice: a finding rule can name the fabric device a finding
// is about, and a fabric finding (no GPU) makes a node-level problem.
func TestFindingDevice(t *testing.T) {
	s := newStepper(t, deviceRule)
	f := finding.Finding{Source: "kmsg", Code: "MLX5_CABLE_UNPLUGGED", Device: "0000:41:00.1", Severity: finding.Warning,
		Action: finding.ActionNone, Time: t0, Message: "mlx5_core 0000:41:00.1: Port module event: module 1, Cable unplugged"}
	p := problem(t, s.at(0, []float64{40}, f), "cable-unplugged")
	if p.GPU != nil || p.Code != "MLX5_CABLE_UNPLUGGED" || !strings.HasPrefix(p.Message, "adapter 0000:41:00.1: mlx5_core") {
		t.Errorf("problem = %+v, want node-level, naming the adapter", p)
	}
	other := f
	other.Device = "0000:c1:00.0"
	if res := newStepper(t, deviceRule).at(0, []float64{40}, other); len(res.Problems) != 0 {
		t.Errorf("another adapter's finding matched device == 0000:41:00.1: %v", active(res))
	}
}
