package analyzer

import (
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"k8s.io/utils/clock"

	"github.com/gpuheal/gpuheal/internal/finding"
	"github.com/gpuheal/gpuheal/internal/gpu"
)

// maxErrorsPerRule bounds Result.Errors: a rule that fails on every GPU
// says so once per evaluation, not eight times.
const maxErrorsPerRule = 1

// Engine evaluates a rule set against successive snapshots and keeps the
// state that makes rules more than predicates: For, count windows,
// ClearAfter, latches and the conditions' transition times. Safe for
// concurrent use (Watch swaps rule sets from its own goroutine).
type Engine struct {
	mu     sync.Mutex
	clock  clock.PassiveClock
	rs     *RuleSet
	rules  map[string]*ruleState
	prev   map[string]counters // by GPU key
	ports  map[string]portMemory
	conds  map[string]*condState
	bootID string
	act    activation
}

type ruleState struct {
	rule  *Rule
	probs map[problemKey]*state
}

// NewEngine starts an engine with rs (nil: no rules).
func NewEngine(rs *RuleSet, clk clock.PassiveClock) *Engine {
	e := &Engine{clock: clk, rules: map[string]*ruleState{}, prev: map[string]counters{}, ports: map[string]portMemory{},
		conds: map[string]*condState{}}
	e.SetRuleSet(rs)
	return e
}

// SetRuleSet swaps in a new rule set. Rules whose name and scope are
// unchanged keep their state, so a reload neither restarts a 5-minute
// For nor clears a latched Xid 79; the new rule's other fields apply
// from the next evaluation.
func (e *Engine) SetRuleSet(rs *RuleSet) {
	if rs == nil {
		rs = &RuleSet{}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	next := make(map[string]*ruleState, len(rs.Rules))
	for _, r := range rs.Rules {
		st := e.rules[r.Name]
		if st == nil || st.rule.Scope != r.Scope {
			st = &ruleState{probs: map[problemKey]*state{}}
		}
		st.rule = r
		next[r.Name] = st
	}
	e.rs, e.rules = rs, next
}

// RuleSet is the active rule set.
func (e *Engine) RuleSet() *RuleSet {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.rs
}

// Reboot tells the engine the node's boot id (/proc/sys/kernel/random/
// boot_id). When it differs from the last one, latched problems and the
// problems raised by findings clear: those were events of the previous
// boot. State rules keep their state; they re-evaluate from the snapshot.
func (e *Engine) Reboot(bootID string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.bootID != "" && bootID != e.bootID {
		for _, rs := range e.rules {
			for k, s := range rs.probs {
				if s.latched || rs.rule.Scope == ScopeFinding {
					delete(rs.probs, k)
				}
			}
		}
	}
	e.bootID = bootID
}

// Reset forgets every problem, latched or not (an operator's "I fixed
// it"). Condition transition times are kept: the next evaluation flips
// them if the node is now healthy.
func (e *Engine) Reset() {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, rs := range e.rules {
		clear(rs.probs)
	}
}

// ForgetGPU forgets every problem of the GPU at bus (a normalized PCI
// address), latched or not, as Reset does for the whole node: the GPU was
// reset and verified, so its findings from before (a contained Xid 94, the
// kernel log's Xid 48) describe a state it no longer has. Its state rules
// re-evaluate from the next snapshot; a fault that remains comes back.
func (e *Engine) ForgetGPU(bus string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, rs := range e.rules {
		for k := range rs.probs {
			if k.gpu == bus {
				delete(rs.probs, k)
			}
		}
	}
	delete(e.prev, bus)
}

// gpuKey identifies a GPU across snapshots: its PCI address survives a
// board swap in the same slot and is what kernel-log findings carry.
func gpuKey(g *gpu.GPUSnapshot) string {
	switch {
	case g.PCIBusID != "":
		return g.PCIBusID
	case g.UUID != "":
		return g.UUID
	}
	return "index:" + strconv.Itoa(g.Index)
}

// Evaluate runs every rule on snap and the findings seen since the
// previous call (each finding must be passed once). A nil snap means the
// backend could not read the GPUs: node rules see node.available false,
// finding rules run, and GPU rules keep their state (no reading is not a
// healthy reading).
func (e *Engine) Evaluate(snap *gpu.NodeSnapshot, findings []finding.Finding) Result {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.clock.Now()
	in := e.prepare(snap, findings, now)
	res := Result{Time: now}
	for _, r := range e.rs.Rules {
		st := e.rules[r.Name]
		nerr := 0
		report := func(g *GPURef, err error) {
			if nerr < maxErrorsPerRule {
				res.Errors = append(res.Errors, &RuleError{Rule: r.Name, GPU: g, Err: err})
			}
			nerr++
		}
		switch r.Scope {
		case ScopeNode:
			e.act = activation{node: in.node, gpus: in.gpus, findings: in.findings, expectedDriver: e.rs.ExpectedDriverVersion}
			e.evalState(st, problemKey{}, nil, now, report)
		case ScopeGPU:
			if snap == nil {
				continue
			}
			for i := range in.gpuRefs {
				ref := &in.gpuRefs[i]
				e.act = activation{node: in.node, gpu: in.gpuMaps[i], findings: in.findings,
					gpuFinds: in.byGPU[ref.PCIBusID], delta: in.deltas[i], seconds: in.seconds[i],
					expectedDriver: e.rs.ExpectedDriverVersion}
				e.evalState(st, problemKey{gpu: in.keys[i]}, ref, now, report)
			}
			// A GPU gone from the snapshot no longer holds anything.
			for _, s := range st.probs {
				if !s.seen {
					s.observe(r, false, now)
				}
			}
		case ScopePort:
			if snap == nil || snap.Fabric == nil {
				continue
			}
			for i := range in.ports {
				p := &in.ports[i]
				e.act = activation{node: in.node, device: p.device, port: p.port, findings: in.findings,
					delta: p.delta, hwDelta: p.hwDelta, seconds: p.seconds, expectedDriver: e.rs.ExpectedDriverVersion}
				e.evalPort(st, p, now, report)
			}
			for _, s := range st.probs {
				if !s.seen {
					s.observe(r, false, now)
				}
			}
		case ScopeFinding:
			for i := range findings {
				f := &findings[i]
				e.act = activation{node: in.node, finding: in.findingMaps[i], findings: in.findings,
					expectedDriver: e.rs.ExpectedDriverVersion}
				e.evalFinding(st, f, in.refFor(f), now, report)
			}
		}
		if nerr > maxErrorsPerRule {
			res.Errors = append(res.Errors, fmt.Errorf("rule %s: %d more evaluation errors", r.Name, nerr-maxErrorsPerRule))
		}
		for k, s := range st.probs {
			s.seen = false
			if snap == nil && r.Scope == ScopeGPU || (snap == nil || snap.Fabric == nil) && r.Scope == ScopePort {
				continue
			}
			if s.expire(r, now) {
				delete(st.probs, k)
			}
		}
	}
	e.act = activation{}
	e.collect(&res)
	return res
}

func (e *Engine) evalState(st *ruleState, key problemKey, ref *GPURef, now time.Time, report func(*GPURef, error)) {
	held, err := evalBool(st.rule.prg, &e.act)
	if err != nil {
		report(ref, err)
	}
	s := st.probs[key]
	if s == nil {
		if !held {
			return // the common case: nothing to remember
		}
		s = &state{}
		st.probs[key] = s
	}
	s.seen = true
	s.gpu = ref
	if s.observe(st.rule, held, now) && s.active {
		e.describe(st.rule, s, nil, report)
	}
}

// evalPort is evalState for one RDMA port. A rule counting by value
// (count.byValue) adds its value's worth of occurrences: a port whose
// link went down three times in one interval flapped three times.
func (e *Engine) evalPort(st *ruleState, p *portInput, now time.Time, report func(*GPURef, error)) {
	held, err := evalBool(st.rule.prg, &e.act)
	if err != nil {
		report(nil, fmt.Errorf("port %s: %w", p.ref.String(), err))
	}
	key := problemKey{port: p.key}
	s := st.probs[key]
	if s == nil {
		if !held {
			return
		}
		s = &state{}
		st.probs[key] = s
	}
	s.seen = true
	ref := p.ref
	s.port = &ref
	times := 1
	if held && st.rule.Count.ByValue {
		times = e.countValue(st.rule)
	}
	if s.observeN(st.rule, held, now, times) && s.active {
		e.describe(st.rule, s, nil, report)
	}
}

// countValue is a byValue rule's value as a number of occurrences: at
// least 1 (the expression held), at most the count's times.
func (e *Engine) countValue(r *Rule) int {
	v, _, err := r.valuePrg.Eval(&e.act)
	if err != nil {
		return 1
	}
	n, ok := v.Value().(int64)
	if !ok || n < 1 {
		return 1
	}
	return int(min(n, int64(r.Count.N)))
}

func (e *Engine) evalFinding(st *ruleState, f *finding.Finding, ref *GPURef, now time.Time, report func(*GPURef, error)) {
	held, err := evalBool(st.rule.prg, &e.act)
	if err != nil {
		report(ref, err)
	}
	if !held {
		return
	}
	at := f.Time
	if at.IsZero() || at.After(now) {
		at = now
	}
	key := problemKey{gpu: f.GPU, port: f.Device, code: f.Code}
	s := st.probs[key]
	if s == nil {
		s = &state{code: f.Code}
		st.probs[key] = s
	}
	s.gpu = ref
	if s.observe(st.rule, true, at) && s.active {
		e.describe(st.rule, s, f, report)
	}
}

// describe renders the problem's reason, message and action from the
// latest evaluation that held.
func (e *Engine) describe(r *Rule, s *state, f *finding.Finding, report func(*GPURef, error)) {
	s.action = r.Action
	if s.action == "" && f != nil {
		s.action = f.Action
	}
	var val any
	if r.valuePrg != nil {
		v, _, err := r.valuePrg.Eval(&e.act)
		if err != nil {
			report(s.gpu, fmt.Errorf("value: %w", err))
		} else {
			val = nativeValue(v)
		}
	}
	d := MessageData{Rule: r.Name, Severity: r.Severity, Action: s.action, GPU: s.gpu, Port: s.port, Value: val, Finding: f}
	s.value = val
	s.reason = r.renderReason(d)
	msg, err := r.renderMessage(d)
	if err != nil {
		report(s.gpu, err)
	}
	s.message = msg
}

func evalBool(p cel.Program, a *activation) (bool, error) {
	v, _, err := p.Eval(a)
	if err != nil {
		return false, err
	}
	b, ok := v.(types.Bool)
	if !ok {
		return false, fmt.Errorf("result is %s, want bool", v.Type().TypeName())
	}
	return bool(b), nil
}

// nativeValue keeps scalars as Go values and prints the rest: a CEL list
// or map may share the evaluation's input maps, which must not outlive it.
func nativeValue(v ref.Val) any {
	switch v := v.(type) {
	case types.Bool, types.Int, types.Uint, types.Double, types.String:
		return v.Value()
	}
	return fmt.Sprint(v.Value())
}
