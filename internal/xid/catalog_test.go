package xid

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuheal/gpuheal/internal/finding"
)

func TestDefaultCoversResearchedCodes(t *testing.T) {
	c := Default()
	want := []uint64{13, 31, 32, 43, 45, 48, 61, 62, 63, 64, 68, 69, 74, 79, 92, 94, 95, 109,
		119, 120, 121, 123, 136, 140, 143, 144, 145, 146, 147, 148, 149, 150, 151, 154,
		155, 156, 157, 158, 159, 160}
	if diff := cmp.Diff(want, c.Codes()); diff != "" {
		t.Errorf("Codes() (-want +got):\n%s", diff)
	}
	for _, code := range c.Codes() {
		e := c.Lookup(code)
		if !e.Known || e.Code != code || e.Name == "" || e.Description == "" {
			t.Errorf("xid %d: incomplete entry %+v", code, e)
		}
		if e.Severity == finding.Unknown {
			t.Errorf("xid %d: a known code needs a real severity", code)
		}
	}
}

// TestDefaultValues pins the research page's gpuheal defaults, so a data
// edit that changes behaviour shows up in review.
func TestDefaultValues(t *testing.T) {
	type sa struct {
		Sev finding.Severity
		Act finding.Action
	}
	want := map[uint64]sa{
		13: {finding.Warning, finding.ActionRestartApp}, 31: {finding.Info, finding.ActionRestartApp},
		32: {finding.Warning, finding.ActionRestartApp}, 43: {finding.Info, finding.ActionNone},
		45: {finding.Info, finding.ActionNone}, 48: {finding.Fatal, finding.ActionResetGPU},
		61: {finding.Fatal, finding.ActionResetGPU}, 62: {finding.Fatal, finding.ActionResetGPU},
		63: {finding.Warning, finding.ActionNone}, 64: {finding.Fatal, finding.ActionReplace},
		68: {finding.Warning, finding.ActionRestartApp}, 69: {finding.Warning, finding.ActionRestartApp},
		74: {finding.Fatal, finding.ActionReboot}, 79: {finding.Fatal, finding.ActionReboot},
		92: {finding.Warning, finding.ActionNone}, 94: {finding.Warning, finding.ActionRestartApp},
		95: {finding.Fatal, finding.ActionResetGPU}, 109: {finding.Warning, finding.ActionRestartApp},
		119: {finding.Fatal, finding.ActionResetGPU}, 120: {finding.Fatal, finding.ActionResetGPU},
		121: {finding.Warning, finding.ActionNone}, 140: {finding.Fatal, finding.ActionReplace},
		143: {finding.Fatal, finding.ActionReboot}, 154: {finding.Info, finding.ActionNone},
		155: {finding.Fatal, finding.ActionResetGPU}, 160: {finding.Fatal, finding.ActionResetGPU},
	}
	c := Default()
	for code, w := range want {
		e := c.Lookup(code)
		if got := (sa{e.Severity, e.Action}); got != w {
			t.Errorf("xid %d: got %v, want %v", code, got, w)
		}
	}
	if diff := cmp.Diff(Threshold{10, time.Hour, finding.Fatal, finding.ActionResetGPU}, c.Lookup(13).Threshold); diff != "" {
		t.Errorf("xid 13 threshold (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(Threshold{2, 24 * time.Hour, finding.Warning, finding.ActionRestartApp}, c.Lookup(31).Threshold); diff != "" {
		t.Errorf("xid 31 threshold (-want +got):\n%s", diff)
	}
}

func TestLookupUnknown(t *testing.T) {
	want := Entry{Code: 999, Severity: finding.Unknown, Action: finding.ActionNone}
	if diff := cmp.Diff(want, Default().Lookup(999)); diff != "" {
		t.Errorf("Lookup(999) (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, Catalog{}.Lookup(999)); diff != "" {
		t.Errorf("zero Catalog Lookup(999) (-want +got):\n%s", diff)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"no code", "- {name: a, severity: info, action: none}", "item 0: code: required"},
		{"no name", "- {code: 7, severity: info, action: none}", "xid 7: name: required"},
		{"bad severity", "- {code: 7, name: a, severity: bad, action: none}", "xid 7: severity:"},
		{"bad action", "- {code: 7, name: a, severity: info, action: nuke}", "xid 7: action:"},
		{"unknown field", "- {code: 7, name: a, severity: info, action: none, colour: red}", "unknown field"},
		{"duplicate", "- {code: 7, name: a, severity: info, action: none}\n- {code: 7, name: b, severity: info, action: none}", "xid 7: listed twice"},
		{"threshold window", "- {code: 7, name: a, severity: info, action: none, threshold: {count: 2, window: soon, severity: fatal, action: none}}", "xid 7: threshold: window:"},
		{"threshold count", "- {code: 7, name: a, severity: info, action: none, threshold: {count: 0, window: 1h, severity: fatal, action: none}}", "xid 7: threshold: count: 0"},
		{"threshold severity", "- {code: 7, name: a, severity: info, action: none, threshold: {count: 2, window: 1h, action: none}}", "xid 7: threshold: severity:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Parse error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}
