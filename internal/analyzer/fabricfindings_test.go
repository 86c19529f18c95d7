package analyzer

import (
	"testing"

	fakeclock "k8s.io/utils/clock/testing"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/detect"
	"github.com/gpuheal/gpuheal/internal/finding"
	"github.com/gpuheal/gpuheal/internal/xid"
)

// TestDefaultRulesOnFabricLines runs real-form adapter and Fabric Manager
// lines through the real detectors and the default rules: which condition
// each one sets, or that it stays a warning.
func TestDefaultRulesOnFabricLines(t *testing.T) {
	tests := []struct {
		name, line string
		fm         bool
		rule       string
		condition  string // "" for a warning: every condition stays True
		reason     string
	}{
		{"transceiver error", "mlx5_core 0000:0c:00.0: mlx5_port_module_event:1132:(pid 0): Port module event[error]: module 0, Cable error, Bus stuck (I2C or data shorted)",
			false, "mellanox-module-error", v1alpha1.ConditionGPUHealNetworkingHealthy, "MellanoxPortModuleError"},
		{"firmware fatal", "mlx5_core 0001:00:00.0: poll_health:695:(pid 3222): Fatal error 1 detected",
			false, "mellanox-firmware-fatal", v1alpha1.ConditionGPUHealNetworkingHealthy, "MellanoxAdapterFailed"},
		{"EFA admin queue", "efa 0000:10:1c.0 rdmap16s28: The device didn't send any completion for admin cmd MODIFY_QP(7) status 1 (id: 12, sq producer: 40, sq consumer: 39, cq consumer: 39)",
			false, "efa-device-failed", v1alpha1.ConditionGPUHealNetworkingHealthy, "EFADeviceFailed"},
		{"cable unplugged", "mlx5_core 0000:41:00.1: Port module event: module 1, Cable unplugged",
			false, "fabric-adapter-warning", "", "FabricAdapterWarning"},
		{"NVSwitch fatal (Fabric Manager)", "[Jul 23 2024 07:53:55] [ERROR] [tid 841] detected NVSwitch fatal error 20034 on fid 0 on NVSwitch pci bus id 00000000:86:00.0 physical id 3 port 33",
			true, "fm-nvswitch-fatal", v1alpha1.ConditionGPUHealAcceleratorHealthy, "NvidiaNVSwitchFatalError"},
		{"NVSwitch non-fatal (Fabric Manager)", "[Feb 27 2025 15:10:02] [ERROR] [tid 12727] detected NVSwitch non-fatal error 12028 on fid 0 on NVSwitch pci bus id 00000000:86:00.0 physical id 3 port 61",
			true, "fm-warning", "", "NvidiaFabricManagerWarning"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := fakeclock.NewFakeClock(t0)
			var fs []finding.Finding
			if tc.fm {
				fs = detect.NewFabricManager(detect.FMOptions{}).Append(nil, tc.line)
			} else {
				fs = detect.New(xid.Default(), detect.Options{Now: clk.Now}).Append(nil, tc.line, clk.Now())
			}
			if len(fs) != 1 {
				t.Fatalf("findings %+v, want one", fs)
			}
			fs[0].Time = clk.Now() // Fabric Manager's stamp is years old
			res := NewEngine(DefaultRuleSet(), clk).Evaluate(nil, fs)
			p := problem(t, res, tc.rule)
			if p.Reason != tc.reason || p.GPU != nil {
				t.Errorf("problem %+v, want reason %s on no GPU", p, tc.reason)
			}
			for _, c := range res.Conditions {
				want := StatusTrue
				if c.Type == tc.condition {
					want = StatusFalse
				}
				if c.Status != want {
					t.Errorf("condition %s is %s, want %s (%s)", c.Type, c.Status, want, c.Message)
				}
			}
		})
	}
}
