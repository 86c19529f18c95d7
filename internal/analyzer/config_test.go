package analyzer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
)

// rule is a config of one good rule and one ("bad-one") with field set
// to value: replaced when the rule has the field, else added.
func rule(field, value string) string {
	fields := [][2]string{
		{"name", "bad-one"}, {"scope", "gpu"}, {"expr", "gpu.missing"}, {"severity", "fatal"},
		{"condition", "AcceleratedHardwareReady"}, {"reason", "Bad"},
	}
	found := false
	for i := range fields {
		if fields[i][0] == field {
			fields[i][1], found = value, true
		}
	}
	if !found {
		fields = append(fields, [2]string{field, value})
	}
	var b strings.Builder
	b.WriteString("rules:\n- name: ok\n  expr: gpu.missing\n  severity: warning\n  condition: KernelReady\n  reason: Ok\n")
	for i, f := range fields {
		if f[1] == "" {
			continue
		}
		b.WriteString(map[bool]string{true: "- ", false: "  "}[i == 0] + f[0] + ": " + f[1] + "\n")
	}
	return b.String()
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       []string
	}{
		{"CEL syntax", rule("expr", "'gpu.missing &&'"), []string{"rule 1 (bad-one): expr: CEL:", "Syntax error"}},
		{"CEL undeclared", rule("expr", "finding.xid == 79"), []string{"rule 1 (bad-one): expr: CEL:", "undeclared reference to 'finding'"}},
		{"CEL not bool", rule("expr", "gpu.index + 1"), []string{"rule 1 (bad-one): expr: CEL: result is int, want bool"}},
		{"value CEL", rule("value", "gpu.missing +"), []string{"rule 1 (bad-one): value: CEL:"}},
		{"no expr", rule("expr", ""), []string{"rule 1 (bad-one): expr: required"}},
		{"bad name", rule("name", "Bad_Name"), []string{"rule 1 (Bad_Name): name:"}},
		{"duplicate name", rule("name", "ok"), []string{"rule 1 (ok): name: also used by rule 0"}},
		{"scope", rule("scope", "cluster"), []string{"rule 1 (bad-one): scope: \"cluster\""}},
		{"severity", rule("severity", "info"), []string{"rule 1 (bad-one): severity: \"info\": want fatal or warning"}},
		{"condition", rule("condition", "Ready"), []string{"rule 1 (bad-one): condition: \"Ready\""}},
		{"reason", rule("reason", "'not a reason'"), []string{"rule 1 (bad-one): reason:"}},
		{"reason template", rule("reason", "'X{{.Nope}}'"), []string{"rule 1 (bad-one): reason:", "Nope"}},
		{"message template field", rule("message", "'{{.GPU.Serial}}'"), []string{"rule 1 (bad-one): message:", "Serial"}},
		{"message template syntax", rule("message", "'{{.GPU'"), []string{"rule 1 (bad-one): message:"}},
		{"action", rule("action", "explode"), []string{"rule 1 (bad-one): action:"}},
		{"duration", rule("for", "soon"), []string{"parsing analyzer config", "soon"}},
		{"negative duration", rule("clearAfter", "-5m"), []string{"must not be negative"}},
		{"count times", rule("count", "{times: 0, window: 5m}"), []string{"rule 1 (bad-one): count: times: 0"}},
		{"count window", rule("count", "{times: 3}"), []string{"rule 1 (bad-one): count: window: required"}},
		{"unknown field", rule("colour", "red"), []string{"unknown field \"colour\""}},
		{"no rules key", "expectedDriverVersion: 570.1\n", []string{"rules: required"}},
		{"empty file", "", []string{"rules: required"}},
		{"xid override", "rules: []\nxid:\n  13: {severity: dire}\n", []string{"xid 13", "severity"}},
		{"every bad rule reported", rule("expr", "nope") + "- {name: two, expr: nope2, severity: fatal, condition: KernelReady, reason: X}\n",
			[]string{"rule 1 (bad-one)", "'nope'", "rule 2 (two)", "'nope2'"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load([]byte(tt.yaml))
			if err == nil {
				t.Fatalf("Load accepted:\n%s", tt.yaml)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nwant it to contain %q", err, w)
				}
			}
		})
	}
}

func TestLoadFindingRuleFor(t *testing.T) {
	y := "rules:\n- name: f\n  scope: finding\n  expr: finding.xid == 79\n  for: 5m\n  severity: fatal\n  condition: AcceleratedHardwareReady\n  reason: X\n"
	if _, err := Load([]byte(y)); err == nil || !strings.Contains(err.Error(), "rule 0 (f): for: a finding is an event") {
		t.Fatalf("err = %v", err)
	}
	y = strings.Replace(y, "  for: 5m\n", "  clearAfter: 0s\n", 1)
	if _, err := Load([]byte(y)); err == nil || !strings.Contains(err.Error(), "clearAfter") {
		t.Fatalf("err = %v", err)
	}
}

func TestLoadValues(t *testing.T) {
	y := `
expectedDriverVersion: 570.133.20
xid:
  13: {severity: fatal}
rules:
- name: f
  scope: finding
  expr: finding.xid == 13
  count: {times: 3, window: 10m}
  severity: fatal
  condition: AcceleratedHardwareReady
  reason: X
`
	rs := mustLoad(t, y)
	r := rs.Rules[0]
	if rs.ExpectedDriverVersion != "570.133.20" || rs.XIDOverrides[13].Severity != "fatal" ||
		r.ClearAfter != DefaultFindingClearAfter || r.Count != (Count{N: 3, Window: 10 * time.Minute}) || r.Action != "" || r.Scope != ScopeFinding {
		t.Errorf("loaded %+v / %+v", rs, r)
	}
	if mustLoad(t, strings.Replace(y, "scope: finding\n  expr: finding.xid == 13", "expr: gpu.missing", 1)).Rules[0].Scope != ScopeGPU {
		t.Error("scope must default to gpu")
	}
}

func TestCheckFile(t *testing.T) {
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "good.yaml"), filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(good, DefaultRulesYAML(), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte(rule("expr", "gpu.nope(")), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := CheckFile(good); err != nil {
		t.Errorf("CheckFile(default rules) = %v", err)
	}
	if err := CheckFile(bad); err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "bad-one") {
		t.Errorf("CheckFile(bad) = %v", err)
	}
	if err := CheckFile(filepath.Join(dir, "none.yaml")); err == nil {
		t.Error("CheckFile(missing) = nil")
	}
}

// TestConditionNames: a rule may name the GPU, kernel or network condition by
// gpuheal's name or the EKS one; either is stored as gpuheal's (the agent
// renames at publishing, --condition-types), anything else is refused.
func TestConditionNames(t *testing.T) {
	for in, want := range map[string]string{
		v1alpha1.ConditionGPUHealAcceleratorHealthy: v1alpha1.ConditionGPUHealAcceleratorHealthy,
		v1alpha1.ConditionAcceleratedHardwareReady:  v1alpha1.ConditionGPUHealAcceleratorHealthy,
		v1alpha1.ConditionGPUHealKernelHealthy:      v1alpha1.ConditionGPUHealKernelHealthy,
		v1alpha1.ConditionKernelReady:               v1alpha1.ConditionGPUHealKernelHealthy,
		v1alpha1.ConditionGPUHealNetworkingHealthy:  v1alpha1.ConditionGPUHealNetworkingHealthy,
		v1alpha1.ConditionNetworkingReady:           v1alpha1.ConditionGPUHealNetworkingHealthy,
	} {
		rs, err := Load([]byte("rules:\n- {name: r, expr: gpu.missing, severity: fatal, reason: X, condition: " + in + "}\n"))
		if err != nil {
			t.Errorf("%s: %v", in, err)
			continue
		}
		if got := rs.Rules[0].Condition; got != want {
			t.Errorf("%s: stored as %s, want %s", in, got, want)
		}
	}
	_, err := Load([]byte("rules:\n- {name: r, expr: gpu.missing, severity: fatal, reason: X, condition: GPUHealthy}\n"))
	if err == nil || !strings.Contains(err.Error(), `condition: "GPUHealthy": want GPUHealAcceleratorHealthy, GPUHealKernelHealthy or GPUHealNetworkingHealthy`) {
		t.Errorf("a misspelt condition: %v", err)
	}
}
