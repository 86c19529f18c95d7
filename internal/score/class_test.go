package score

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestClassFor(t *testing.T) {
	tests := []struct {
		action, severity string
		want             Class
	}{
		{"Replace", "fatal", ClassReplace},
		{"replace", "warning", ClassReplace},
		{"Reboot", "fatal", ClassReboot},
		{" reboot ", "", ClassReboot},
		{"reset-gpu", "fatal", ClassResetGPU},
		{"restart-app", "fatal", ClassRestartApp}, // the application's fault
		{"CordonOnly", "warning", ClassFatal},
		{"Ignore", "fatal", ClassFatal},
		{"none", "Fatal", ClassFatal},
		{"Ignore", "critical", ClassFatal},
		{"", "warning", ClassWarning},
		{"none", "unknown", ClassWarning},
		{"Ignore", "", ClassWarning},
		{"none", "info", ClassInfo},
		{"reinstall", "info", ClassInfo},
	}
	for _, tt := range tests {
		if got := ClassFor(tt.action, tt.severity); got != tt.want {
			t.Errorf("ClassFor(%q, %q) = %v, want %v", tt.action, tt.severity, got, tt.want)
		}
	}
}

func TestClassText(t *testing.T) {
	for _, c := range Classes() {
		got, err := ParseClass(c.String())
		if got != c || err != nil {
			t.Errorf("ParseClass(%q) = %v, %v", c, got, err)
		}
	}
	if _, err := ParseClass("catastrophic"); err == nil || !strings.Contains(err.Error(), `"catastrophic"`) {
		t.Errorf("ParseClass(catastrophic) err = %v", err)
	}
	if s := Class(0).String(); s != "Class(0)" {
		t.Errorf("Class(0).String() = %q", s)
	}
	if _, err := json.Marshal(Event{}); err == nil {
		t.Error("marshalling an event without class: no error")
	}

	// Events round-trip through JSON by class name, as the audit store keeps them.
	in := []Event{{Time: now, Class: ClassReplace, GPU: "GPU-1"}, {Time: now, Class: ClassWarning}}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"class":"replace"`) {
		t.Errorf("JSON %s lacks the class name", b)
	}
	var out []Event
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(in, out); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if err := json.Unmarshal([]byte(`{"class":"dire"}`), &Event{}); err == nil {
		t.Error("unknown class name: no error")
	}
}

func TestParseWeights(t *testing.T) {
	got, err := ParseWeights(" replace=50, reset-gpu = 8.5,info=0")
	if err != nil {
		t.Fatal(err)
	}
	want := map[Class]float64{ClassReplace: 50, ClassResetGPU: 8.5, ClassInfo: 0}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ParseWeights (-want +got):\n%s", diff)
	}
	if got, err := ParseWeights(""); err != nil || len(got) != 0 {
		t.Errorf("ParseWeights(\"\") = %v, %v", got, err)
	}
	for in, msg := range map[string]string{
		"replace":            `weight "replace": want class=points`,
		"dire=3":             `weight "dire=3": class "dire"`,
		"reboot=-1":          `weight "reboot=-1": points must be a number ≥ 0`,
		"reboot=NaN":         "points must be",
		"reboot=1,reboot=2":  "class reboot given twice",
		"reboot=1,,replace=": `weight "": want class=points`,
	} {
		if _, err := ParseWeights(in); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("ParseWeights(%q) err = %v, want %q", in, err, msg)
		}
	}
}

func FuzzParseWeights(f *testing.F) {
	f.Add("replace=40,reboot=20")
	f.Add("warning=1e308,info=0")
	f.Add("=,=")
	f.Fuzz(func(t *testing.T, s string) {
		w, err := ParseWeights(s)
		if err != nil {
			return
		}
		cfg := DefaultConfig()
		cfg.Weights = w
		if _, err := New(cfg); err != nil {
			t.Fatalf("weights %v parsed from %q fail validation: %v", w, s, err)
		}
	})
}
