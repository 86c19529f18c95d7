package analyzer

import (
	"fmt"
	"strings"
	"text/template"
	"time"

	"github.com/google/cel-go/cel"

	"github.com/gpuheal/gpuheal/internal/finding"
)

// Rule is one compiled rule.
type Rule struct {
	Name      string
	Scope     Scope
	Expr      string
	ValueExpr string
	// For: the expression must hold continuously this long before the
	// problem is active.
	For time.Duration
	// Count, when N > 0: the problem holds while at least N occurrences
	// (evaluations where the expression was true, or matching findings)
	// fall within Window, per GPU (and per finding code).
	Count    Count
	Severity finding.Severity
	// Condition is GPUHealAcceleratorHealthy or GPUHealKernelHealthy (a
	// config's EKS names are stored as these).
	Condition string
	// Action is the recommended remediation; empty on a finding rule
	// means "the finding's own action".
	Action finding.Action
	// ClearAfter: how long the problem must be gone before it clears.
	ClearAfter time.Duration
	// Latched problems clear only on a reboot (boot id change) or Reset.
	Latched bool

	prg      cel.Program
	valuePrg cel.Program // nil without a value expression
	reason   *template.Template
	message  *template.Template // nil: default message
}

// Count is a rule's count window.
type Count struct {
	N      int
	Window time.Duration
	// ByValue: an evaluation that holds is as many occurrences as the
	// rule's value (1 at least, N at most).
	ByValue bool
}

func (r *Rule) compileExprs() error {
	if strings.TrimSpace(r.Expr) == "" {
		return fmt.Errorf("expr: required")
	}
	env, err := scopeEnv(r.Scope)
	if err != nil {
		return fmt.Errorf("expr: building CEL environment: %w", err)
	}
	if r.prg, err = compile(env, r.Expr, true); err != nil {
		return fmt.Errorf("expr: %w", err)
	}
	if r.ValueExpr != "" {
		if r.valuePrg, err = compile(env, r.ValueExpr, false); err != nil {
			return fmt.Errorf("value: %w", err)
		}
	}
	return nil
}

// compile checks and plans one expression. A boolean rule may also be
// dyn: a bare map lookup (gpu.missing) is dyn to the checker, and a
// non-bool at run time is an evaluation error.
func compile(env *cel.Env, src string, wantBool bool) (cel.Program, error) {
	ast, iss := env.Compile(src)
	if iss != nil && iss.Err() != nil {
		return nil, fmt.Errorf("CEL: %w", iss.Err())
	}
	if wantBool {
		if t := ast.OutputType(); !t.IsExactType(cel.BoolType) && !t.IsExactType(cel.DynType) {
			return nil, fmt.Errorf("CEL: result is %s, want bool", t)
		}
	}
	// OptOptimize folds constants once at load, so the per-interval cost is
	// only the variable part.
	return env.Program(ast, cel.EvalOptions(cel.OptOptimize))
}

// MessageData is what reason and message templates see.
type MessageData struct {
	Rule     string
	Severity finding.Severity
	Action   finding.Action
	// GPU is nil for a node-level problem.
	GPU *GPURef
	// Port is the RDMA port of a port rule, else nil.
	Port *PortRef
	// Value is the result of the rule's value expression, or nil.
	Value any
	// Finding is the matching finding (finding rules only).
	Finding *finding.Finding
}

func (r *Rule) compileTemplates(reason, message string) error {
	var err error
	if reason == "" {
		return fmt.Errorf("reason: required")
	}
	if r.reason, err = template.New("reason").Option("missingkey=error").Parse(reason); err != nil {
		return fmt.Errorf("reason: %w", err)
	}
	if message != "" {
		if r.message, err = template.New("message").Option("missingkey=error").Parse(message); err != nil {
			return fmt.Errorf("message: %w", err)
		}
	}
	// text/template resolves field names only when it runs, so run both
	// once on sample data of this scope: a typo fails Load, not the agent
	// at 3 a.m.
	sample := r.sampleData()
	got, err := render(r.reason, sample)
	if err != nil {
		return fmt.Errorf("reason: %w", err)
	}
	if !strings.Contains(reason, "{{") && !reasonRE.MatchString(got) {
		return fmt.Errorf("reason: %q: want a CamelCase identifier like NvidiaXID79Error", reason)
	}
	if r.message != nil {
		if _, err := render(r.message, sample); err != nil {
			return fmt.Errorf("message: %w", err)
		}
	}
	return nil
}

func (r *Rule) sampleData() MessageData {
	d := MessageData{Rule: r.Name, Severity: r.Severity, Action: r.Action, Value: int64(1)}
	if r.Scope == ScopePort {
		d.Port = &PortRef{Device: "mlx5_0", Port: 1, Kind: "infiniband", PCIBusID: "0000:00:00.0"}
		return d
	}
	if r.Scope != ScopeNode {
		d.GPU = &GPURef{Index: 0, UUID: "GPU-00000000-0000-0000-0000-000000000000", PCIBusID: "0000:00:00.0", Name: "sample"}
	}
	if r.Scope == ScopeFinding {
		d.Finding = &finding.Finding{Source: "kmsg", Code: "XID79", Xid: 79, GPU: "0000:00:00.0",
			Severity: finding.Fatal, Action: finding.ActionReboot, Message: "sample"}
	}
	return d
}

func render(t *template.Template, d MessageData) (string, error) {
	var b strings.Builder
	if err := t.Execute(&b, d); err != nil {
		return "", err
	}
	return b.String(), nil
}

// renderReason renders the reason and repairs anything that is not a
// valid condition reason (a template over finding data could yield one),
// so a bad value can never fail the condition patch.
func (r *Rule) renderReason(d MessageData) string {
	s, err := render(r.reason, d)
	if err == nil && reasonRE.MatchString(s) {
		return s
	}
	var b strings.Builder
	for _, c := range s {
		if c < 128 && (c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' && b.Len() > 0) {
			b.WriteRune(c)
		}
	}
	if b.Len() == 0 {
		return "GPUHealRule"
	}
	return b.String()
}

// renderMessage renders the message, falling back to a default that
// still says which rule fired when the template fails at run time.
func (r *Rule) renderMessage(d MessageData) (string, error) {
	if r.message == nil {
		return defaultMessage(d), nil
	}
	s, err := render(r.message, d)
	if err != nil {
		return defaultMessage(d), fmt.Errorf("rule %s: message: %w", r.Name, err)
	}
	return s, nil
}

func defaultMessage(d MessageData) string {
	var b strings.Builder
	if d.GPU != nil {
		fmt.Fprintf(&b, "GPU %d (%s): ", d.GPU.Index, d.GPU.PCIBusID)
	}
	if d.Port != nil {
		fmt.Fprintf(&b, "%s port %s: ", d.Port.Kind, d.Port.String())
	}
	if d.Finding != nil && d.Finding.Message != "" {
		b.WriteString(d.Finding.Message)
		return b.String()
	}
	fmt.Fprintf(&b, "rule %s", d.Rule)
	if d.Value != nil {
		fmt.Fprintf(&b, ": %v", d.Value)
	}
	return b.String()
}
