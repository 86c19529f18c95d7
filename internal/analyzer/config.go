package analyzer

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"time"

	"sigs.k8s.io/yaml"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/finding"
	"github.com/gpuheal/gpuheal/internal/xid"
)

// Scope says what one evaluation of a rule's expression sees.
type Scope string

const (
	// ScopeGPU evaluates once per GPU with gpu, gpuFindings, delta and seconds.
	ScopeGPU Scope = "gpu"
	// ScopeNode evaluates once per snapshot with gpus.
	ScopeNode Scope = "node"
	// ScopeFinding evaluates once per kernel-log finding with finding.
	ScopeFinding Scope = "finding"
	// ScopePort evaluates once per RDMA port (InfiniBand, RoCE, EFA) with
	// device, port, delta, hwDelta and seconds.
	ScopePort Scope = "port"
)

// DefaultFindingClearAfter is how long a finding-scope problem stays
// active after its last matching finding when the rule does not say.
const DefaultFindingClearAfter = 10 * time.Minute

// maxRules and maxCount bound what a config file can make the agent
// hold in memory and evaluate every interval.
const (
	maxRules = 500
	maxCount = 1000
)

// reasonRE is the Kubernetes condition-reason form (CamelCase identifier).
var (
	reasonRE = regexp.MustCompile(`^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`)
	nameRE   = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
)

// rawConfig is the YAML form of the agent's analyzer config.
type rawConfig struct {
	ExpectedDriverVersion string `json:"expectedDriverVersion,omitempty"`
	// Rules is a pointer so that a file without rules: is an error: an
	// empty or truncated file must not silently replace every rule with
	// none. "rules: []" turns them all off on purpose.
	Rules *[]rawRule      `json:"rules"`
	XID   json.RawMessage `json:"xid,omitempty"`
}

type rawRule struct {
	Name       string    `json:"name"`
	Scope      string    `json:"scope"`
	Expr       string    `json:"expr"`
	Value      string    `json:"value,omitempty"`
	For        *duration `json:"for,omitempty"`
	Count      *rawCount `json:"count,omitempty"`
	Severity   string    `json:"severity"`
	Condition  string    `json:"condition"`
	Reason     string    `json:"reason"`
	Message    string    `json:"message,omitempty"`
	Action     string    `json:"action,omitempty"`
	ClearAfter *duration `json:"clearAfter,omitempty"`
	Latched    bool      `json:"latched,omitempty"`
}

// rawCount is {times: 3, window: 10m}. Not "n": YAML 1.1, which
// sigs.k8s.io/yaml speaks, reads a bare n as the boolean false.
type rawCount struct {
	Times  int       `json:"times"`
	Window *duration `json:"window"`
	// ByValue: an evaluation that holds counts as its value's worth of
	// occurrences (a port rule only; the value expression is required).
	ByValue bool `json:"byValue,omitempty"`
}

// duration reads a Go duration string ("5m", "90s").
type duration time.Duration

func (d *duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("want a duration string like \"5m\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	if v < 0 {
		return fmt.Errorf("duration %q: must not be negative", s)
	}
	*d = duration(v)
	return nil
}

// Load parses and compiles a config. Errors name the rule (index and
// name) and the field; CEL errors carry CEL's own message. Every bad rule
// is reported, not just the first, so one --check-config run shows all.
func Load(data []byte) (*RuleSet, error) {
	var raw rawConfig
	if err := yaml.UnmarshalStrict(data, &raw); err != nil {
		return nil, fmt.Errorf("parsing analyzer config: %w", err)
	}
	if raw.Rules == nil {
		return nil, fmt.Errorf("parsing analyzer config: rules: required (use \"rules: []\" for none)")
	}
	if len(*raw.Rules) > maxRules {
		return nil, fmt.Errorf("parsing analyzer config: %d rules: at most %d", len(*raw.Rules), maxRules)
	}
	rs := &RuleSet{ExpectedDriverVersion: raw.ExpectedDriverVersion, hash: sha256.Sum256(data)}
	if len(raw.XID) > 0 && string(raw.XID) != "null" {
		// xid.ParseOverrides wants the whole document; hand it just "xid".
		doc, _ := json.Marshal(map[string]json.RawMessage{"xid": raw.XID})
		ov, err := xid.ParseOverrides(doc)
		if err != nil {
			return nil, err
		}
		if _, err := xid.Default().WithOverrides(ov); err != nil {
			return nil, err
		}
		rs.XIDOverrides = ov
	}
	var errs []error
	seen := make(map[string]int, len(*raw.Rules))
	for i, r := range *raw.Rules {
		if j, dup := seen[r.Name]; dup && r.Name != "" {
			errs = append(errs, fmt.Errorf("rule %d (%s): name: also used by rule %d", i, r.Name, j))
			continue
		}
		seen[r.Name] = i
		rule, err := r.compile()
		if err != nil {
			errs = append(errs, fmt.Errorf("rule %d (%s): %w", i, r.Name, err))
			continue
		}
		rs.Rules = append(rs.Rules, rule)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("loading analyzer rules: %w", errors.Join(errs...))
	}
	return rs, nil
}

// LoadFile reads and loads path.
func LoadFile(path string) (*RuleSet, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading analyzer config: %w", err)
	}
	rs, err := Load(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return rs, nil
}

// CheckFile validates path offline, for gpuheal-agent --check-config.
func CheckFile(path string) error {
	_, err := LoadFile(path)
	return err
}

// compile validates every field and compiles the CEL expressions and
// message templates.
func (r rawRule) compile() (*Rule, error) {
	if !nameRE.MatchString(r.Name) {
		return nil, fmt.Errorf("name: %q: want lower-case letters, digits and dashes, at most 63", r.Name)
	}
	rule := &Rule{Name: r.Name, Scope: Scope(r.Scope), Latched: r.Latched, Expr: r.Expr, ValueExpr: r.Value}
	switch rule.Scope {
	case ScopeGPU, ScopeNode, ScopeFinding, ScopePort:
	case "":
		rule.Scope = ScopeGPU
	default:
		return nil, fmt.Errorf("scope: %q: want gpu, node, port or finding", r.Scope)
	}
	var err error
	if rule.Severity, err = finding.ParseSeverity(r.Severity); err != nil || (rule.Severity != finding.Fatal && rule.Severity != finding.Warning) {
		return nil, fmt.Errorf("severity: %q: want fatal or warning", r.Severity)
	}
	if r.Action != "" {
		if rule.Action, err = finding.ParseAction(r.Action); err != nil {
			return nil, fmt.Errorf("action: %w", err)
		}
	} else if rule.Scope != ScopeFinding {
		rule.Action = finding.ActionNone
	}
	// Only the GPU, kernel and network conditions: a typo in a config
	// file must not invent a node condition nobody watches. Either name of
	// each is taken (rules written for the EKS names keep working) and
	// stored as gpuheal's own; the agent publishes it under
	// --condition-types.
	switch {
	case v1alpha1.IsAgentGPUCondition(r.Condition):
		rule.Condition = v1alpha1.ConditionGPUHealAcceleratorHealthy
	case v1alpha1.IsAgentKernelCondition(r.Condition):
		rule.Condition = v1alpha1.ConditionGPUHealKernelHealthy
	case v1alpha1.IsAgentNetworkCondition(r.Condition):
		rule.Condition = v1alpha1.ConditionGPUHealNetworkingHealthy
	default:
		return nil, fmt.Errorf("condition: %q: want %s, %s or %s (or the EKS names %s, %s, %s)", r.Condition,
			v1alpha1.ConditionGPUHealAcceleratorHealthy, v1alpha1.ConditionGPUHealKernelHealthy, v1alpha1.ConditionGPUHealNetworkingHealthy,
			v1alpha1.ConditionAcceleratedHardwareReady, v1alpha1.ConditionKernelReady, v1alpha1.ConditionNetworkingReady)
	}
	if r.For != nil {
		rule.For = time.Duration(*r.For)
		if rule.Scope == ScopeFinding && rule.For > 0 {
			return nil, fmt.Errorf("for: a finding is an event, it cannot hold for a time; use count")
		}
	}
	if r.ClearAfter != nil {
		rule.ClearAfter = time.Duration(*r.ClearAfter)
	} else if rule.Scope == ScopeFinding {
		rule.ClearAfter = DefaultFindingClearAfter
	}
	if rule.Scope == ScopeFinding && rule.ClearAfter == 0 && !rule.Latched {
		return nil, fmt.Errorf("clearAfter: a finding rule needs clearAfter above 0 (or latched), or it could never be active")
	}
	if c := r.Count; c != nil {
		if c.Times < 1 || c.Times > maxCount {
			return nil, fmt.Errorf("count: times: %d: want 1–%d", c.Times, maxCount)
		}
		if c.Window == nil || *c.Window <= 0 {
			return nil, fmt.Errorf("count: window: required and above 0")
		}
		rule.Count = Count{N: c.Times, Window: time.Duration(*c.Window), ByValue: c.ByValue}
		if c.ByValue && (rule.Scope != ScopePort || r.Value == "") {
			return nil, fmt.Errorf("count: byValue: only for a port rule with a value expression")
		}
	}
	if err := rule.compileExprs(); err != nil {
		return nil, err
	}
	if err := rule.compileTemplates(r.Reason, r.Message); err != nil {
		return nil, err
	}
	return rule, nil
}

// RuleSet is a loaded, compiled config. It is immutable once loaded and
// safe to share.
type RuleSet struct {
	Rules []*Rule
	// ExpectedDriverVersion is the CEL variable expectedDriverVersion
	// ("" when unset).
	ExpectedDriverVersion string
	// XIDOverrides is the config's xid: section, checked against the
	// default catalog; nil when absent. The agent applies it to the
	// catalog that the kernel-log detector uses.
	XIDOverrides map[uint64]xid.Override
	hash         [32]byte
}

// Len is the number of rules, for gpuheal_rules_loaded.
func (rs *RuleSet) Len() int {
	if rs == nil {
		return 0
	}
	return len(rs.Rules)
}

// Hash is the SHA-256 of the bytes the set was loaded from; Watch uses it
// to skip reloading unchanged content.
func (rs *RuleSet) Hash() [32]byte { return rs.hash }
