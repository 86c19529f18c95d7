package xid

import (
	"testing"

	"github.com/gpuheal/gpuheal/internal/finding"
)

func TestClassify(t *testing.T) {
	tests := []struct {
		name   string
		code   uint64
		detail string
		sev    finding.Severity
		act    finding.Action
	}{
		{"149 fatal", 149, "NETIR_LINK_EVT  Fatal   XC0 i0 Link 01 (0x021425c6 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)", finding.Fatal, finding.ActionResetGPU},
		{"144 nonfatal", 144, "SAW_MVB_EVT  Nonfatal   XC0 i0 Link 01 (0x00000001 0x00000000)", finding.Info, finding.ActionNone},
		{"150 non-fatal spelled with dash", 150, "MSE_WATCHDOG Non-fatal Link 02", finding.Info, finding.ActionNone},
		{"147 capital mnemonic is not the word", 147, "TREX_FATAL_ERR Link 3", finding.Warning, finding.ActionNone},
		{"148 says neither", 148, "", finding.Warning, finding.ActionNone},
		{"154 to none", 154, "GPU recovery action changed from 0x4 (Drain and Reset) to 0x0 (None)", finding.Info, finding.ActionNone},
		{"154 to reset", 154, "GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset)", finding.Fatal, finding.ActionResetGPU},
		{"154 to reboot", 154, "GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot)", finding.Fatal, finding.ActionReboot},
		{"154 to drain p2p", 154, "GPU recovery action changed from 0x0 (None) to 0x3 (Drain P2P)", finding.Warning, finding.ActionRestartApp},
		{"154 to drain and reset", 154, "GPU recovery action changed from 0x0 (None) to 0x4 (Drain and Reset)", finding.Fatal, finding.ActionResetGPU},
		{"154 to a future action", 154, "GPU recovery action changed from 0x0 (None) to 0x9 (Something)", finding.Unknown, finding.ActionNone},
		{"154 name containing ' to '", 154, "GPU recovery action changed from 0x0 (None) to 0x2 (Go to reboot)", finding.Fatal, finding.ActionReboot},
		{"154 without names", 154, "GPU recovery action changed from 0x0 to 0x1", finding.Fatal, finding.ActionResetGPU},
		{"154 unreadable", 154, "GPU recovery action changed", finding.Info, finding.ActionNone},
		{"94 no reset", 94, "pid=7194, Contained: CE User Channel (0x9). RST: No, D-RST: No", finding.Warning, finding.ActionRestartApp},
		{"94 reset required", 94, "pid=7194, Contained: CE User Channel (0x9). RST: Yes, D-RST: No", finding.Fatal, finding.ActionResetGPU},
		{"94 drain and reset", 94, "pid=7194, Contained: CE User Channel (0x9). RST: No, D-RST: Yes", finding.Fatal, finding.ActionResetGPU},
		{"95 reset", 95, "pid=7062, Uncontained: LTC TAG (0x2, 0x1). RST: Yes, D-RST: No", finding.Fatal, finding.ActionResetGPU},
		{"95 without flags", 95, "pid=7062, Uncontained: LTC TAG (0x2, 0x1).", finding.Fatal, finding.ActionResetGPU},
		{"plain code", 79, "GPU has fallen off the bus.", finding.Fatal, finding.ActionReboot},
		{"unknown code", 999, "whatever", finding.Unknown, finding.ActionNone},
	}
	c := Default()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := c.Classify(tt.code, tt.detail)
			if e.Severity != tt.sev || e.Action != tt.act {
				t.Errorf("Classify(%d, %q) = %s/%s, want %s/%s", tt.code, tt.detail, e.Severity, e.Action, tt.sev, tt.act)
			}
		})
	}
}

func TestClassifyPinnedByOverride(t *testing.T) {
	c, err := Default().WithOverrides(map[uint64]Override{
		149: {Severity: finding.Warning, Action: finding.ActionNone},
		154: {Action: finding.ActionReboot},
		// A threshold-only override does not pin: the line still decides.
		144: {Count: 3, Window: 1e9, Severity: finding.Fatal},
	})
	if err != nil {
		t.Fatal(err)
	}
	if e := c.Classify(149, "NETIR_LINK_EVT  Fatal   XC0"); e.Severity != finding.Warning || e.Action != finding.ActionNone {
		t.Errorf("pinned 149: got %s/%s, want warning/none", e.Severity, e.Action)
	}
	if e := c.Classify(154, "GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset)"); e.Severity != finding.Info || e.Action != finding.ActionReboot {
		t.Errorf("pinned 154: got %s/%s, want info/reboot", e.Severity, e.Action)
	}
	if e := c.Classify(144, "SAW Fatal"); e.Severity != finding.Fatal || e.Action != finding.ActionResetGPU {
		t.Errorf("threshold-only 144: got %s/%s, want fatal/reset-gpu", e.Severity, e.Action)
	}
}

func TestResetFlags(t *testing.T) {
	tests := []struct {
		in            string
		rst, drst, ok bool
	}{
		{"RST: No, D-RST: No", false, false, true},
		{"RST: Yes, D-RST: No", true, false, true},
		{"RST: No, D-RST: Yes", false, true, true},
		{"D-RST: Yes", false, true, true},
		{"nothing here", false, false, false},
		{"RST: ", false, false, true},
	}
	for _, tt := range tests {
		rst, drst, ok := ResetFlags(tt.in)
		if rst != tt.rst || drst != tt.drst || ok != tt.ok {
			t.Errorf("ResetFlags(%q) = %v, %v, %v; want %v, %v, %v", tt.in, rst, drst, ok, tt.rst, tt.drst, tt.ok)
		}
	}
}
