package xid

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuheal/gpuheal/internal/finding"
)

func TestParseOverrides(t *testing.T) {
	in := `
xid:
  13: {severity: fatal, count: 5, window: 10m}
  31:
    action: none
  170: {severity: warning, action: reset-gpu}
`
	got, err := ParseOverrides([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := map[uint64]Override{
		13:  {Severity: finding.Fatal, Count: 5, Window: 10 * time.Minute},
		31:  {Action: finding.ActionNone},
		170: {Severity: finding.Warning, Action: finding.ActionResetGPU},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ParseOverrides (-want +got):\n%s", diff)
	}
	// The JSON form round-trips, so a config struct can embed Override.
	b, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	var back map[uint64]Override
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatalf("unmarshal %s: %v", b, err)
	}
	if diff := cmp.Diff(want, back); diff != "" {
		t.Errorf("round trip via %s (-want +got):\n%s", b, diff)
	}
}

func TestParseOverridesErrors(t *testing.T) {
	tests := []struct{ name, yaml, want string }{
		{"code not a number", "xid: {thirteen: {severity: fatal}}", `xid "thirteen": not a code`},
		{"bad severity", "xid: {13: {severity: dire}}", "xid 13: severity:"},
		{"bad action", "xid: {13: {action: explode}}", "xid 13: action:"},
		{"window without unit", "xid: {13: {count: 2, window: 600}}", "xid 13: window: 600: want a duration with a unit"},
		{"window not a duration", "xid: {13: {count: 2, window: often}}", "xid 13: window:"},
		{"typo in field", "xid: {13: {severty: fatal}}", `xid 13: json: unknown field "severty"`},
		{"count not a number", "xid: {13: {count: many}}", "xid 13:"},
		{"unknown top-level key", "xids: {13: {severity: fatal}}", "unknown field"},
		{"same code twice", `xid: {13: {severity: fatal}, "013": {severity: info}}`, "xid 13: listed twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseOverrides([]byte(tt.yaml))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
	if got, err := ParseOverrides(nil); err != nil || len(got) != 0 {
		t.Errorf("empty document: got %v, %v; want no overrides", got, err)
	}
}

func TestWithOverrides(t *testing.T) {
	base := Default()
	c, err := base.WithOverrides(map[uint64]Override{
		13:  {Severity: finding.Fatal, Count: 5, Window: 10 * time.Minute},
		43:  {Severity: finding.Warning},
		79:  {Action: finding.ActionReplace},
		92:  {Severity: finding.Fatal, Count: 3, Window: time.Hour},
		170: {Severity: finding.Fatal, Action: finding.ActionReboot},
	})
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		code uint64
		want Entry
	}{
		{13, func() Entry {
			e := base.Lookup(13)
			e.Threshold = Threshold{5, 10 * time.Minute, finding.Fatal, finding.ActionResetGPU}
			return e
		}()},
		{43, func() Entry { e := base.Lookup(43); e.Severity = finding.Warning; return e }()},
		{79, func() Entry { e := base.Lookup(79); e.Action = finding.ActionReplace; return e }()},
		// No catalog threshold: the action falls back to the code's own.
		{92, func() Entry {
			e := base.Lookup(92)
			e.Threshold = Threshold{3, time.Hour, finding.Fatal, finding.ActionNone}
			return e
		}()},
		{170, Entry{Code: 170, Severity: finding.Fatal, Action: finding.ActionReboot}},
	}
	for _, ch := range checks {
		if diff := cmp.Diff(ch.want, c.Lookup(ch.code)); diff != "" {
			t.Errorf("xid %d (-want +got):\n%s", ch.code, diff)
		}
	}
	if base.Lookup(43).Severity != finding.Info {
		t.Error("WithOverrides changed the catalog it was called on")
	}
}

func TestWithOverridesErrors(t *testing.T) {
	tests := []struct {
		name string
		ov   map[uint64]Override
		want []string
	}{
		{"bad severity", map[uint64]Override{13: {Severity: "dire"}}, []string{"xid 13: severity:"}},
		{"bad action", map[uint64]Override{13: {Action: "explode"}}, []string{"xid 13: action:"}},
		{"negative count", map[uint64]Override{13: {Count: -1, Window: time.Hour}}, []string{"xid 13: count: -1"}},
		{"huge count", map[uint64]Override{13: {Count: MaxCount + 1, Window: time.Hour}}, []string{"xid 13: count: 1001: at most 1000"}},
		{"negative window", map[uint64]Override{13: {Count: 2, Window: -time.Hour}}, []string{"xid 13: window: -1h0m0s"}},
		{"window alone", map[uint64]Override{13: {Window: time.Hour}}, []string{"xid 13: window: set without count"}},
		{"empty", map[uint64]Override{13: {}}, []string{"xid 13: nothing to override"}},
		{"count without window", map[uint64]Override{92: {Count: 2, Severity: finding.Fatal}}, []string{"xid 92: window: required with count"}},
		{"count without severity", map[uint64]Override{92: {Count: 2, Window: time.Hour}}, []string{"xid 92: severity: required with count"}},
		{"every error reported", map[uint64]Override{13: {}, 31: {Action: "x"}}, []string{"xid 13: nothing", "xid 31: action:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Default().WithOverrides(tt.ov)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
	// A count on a code with a catalog threshold inherits its window and severity.
	c, err := Default().WithOverrides(map[uint64]Override{13: {Count: 3}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Threshold{3, time.Hour, finding.Fatal, finding.ActionResetGPU}, c.Lookup(13).Threshold); diff != "" {
		t.Errorf("inherited threshold (-want +got):\n%s", diff)
	}
}

func FuzzParseOverrides(f *testing.F) {
	f.Add([]byte("xid: {13: {severity: fatal, count: 5, window: 10m}}"))
	f.Add([]byte("xid:\n  31: {action: none}\n"))
	f.Add([]byte("xid: {1: {window: 5}}"))
	f.Fuzz(func(_ *testing.T, data []byte) {
		ov, err := ParseOverrides(data)
		if err != nil {
			return
		}
		// Whatever parses must be accepted or rejected cleanly.
		_, _ = Default().WithOverrides(ov)
	})
}
