package analyzer

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	fakeclock "k8s.io/utils/clock/testing"

	"github.com/gpuheal/gpuheal/internal/detect"
	"github.com/gpuheal/gpuheal/internal/finding"
	"github.com/gpuheal/gpuheal/internal/gpu"
	"github.com/gpuheal/gpuheal/internal/gpu/sim"
	"github.com/gpuheal/gpuheal/internal/xid"
)

// t0 is a fixed wall time for fake clocks.
var t0 = time.Date(2025, 2, 23, 16, 24, 18, 0, time.UTC)

// rig is a simulated node whose kernel log runs through the real
// detector into an engine, all on one fake clock.
type rig struct {
	t    testing.TB
	clk  *fakeclock.FakeClock
	node *sim.Node
	det  *detect.Detector
	eng  *Engine
	seq  uint64
	// down makes eval pass a nil snapshot, as when NVML is gone.
	down bool
}

func newRig(t testing.TB, opts sim.Options, rs *RuleSet) *rig {
	t.Helper()
	clk := fakeclock.NewFakeClock(t0)
	opts.Clock = clk
	n, err := sim.New(opts)
	if err != nil {
		t.Fatalf("sim.New: %v", err)
	}
	return &rig{t: t, clk: clk, node: n, det: detect.New(xid.Default(), detect.Options{Now: clk.Now}), eng: NewEngine(rs, clk)}
}

func (r *rig) inject(kind sim.Kind, gpuIndex int, params map[string]string) {
	r.t.Helper()
	if err := r.node.Inject(sim.Fault{Kind: kind, GPU: gpuIndex, Params: params}); err != nil {
		r.t.Fatalf("Inject %s: %v", kind, err)
	}
}

// findings runs the kernel-log records written since the last call
// through the detector.
func (r *rig) findings() []finding.Finding {
	var out []finding.Finding
	for _, rec := range r.node.KernelLog(r.seq) {
		out = r.det.Append(out, rec.Message, r.clk.Now())
		r.seq = rec.Seq + 1
	}
	return out
}

func (r *rig) eval() Result {
	r.t.Helper()
	var snap *gpu.NodeSnapshot
	if !r.down {
		var err error
		if snap, err = r.node.Snapshot(context.Background()); err != nil {
			r.t.Fatalf("Snapshot: %v", err)
		}
	}
	return r.eng.Evaluate(snap, r.findings())
}

// run steps the clock by d in 30s ticks, evaluating at each, as the
// agent would, and returns the last result.
func (r *rig) run(d time.Duration) Result {
	r.t.Helper()
	res := r.eval()
	for end := r.clk.Now().Add(d); r.clk.Now().Before(end); {
		r.clk.Step(30 * time.Second)
		res = r.eval()
	}
	return res
}

// active lists the active problems as "rule/gpu" (gpu "node" for node
// problems), sorted.
func active(res Result) []string {
	var out []string
	for _, p := range res.Problems {
		g := "node"
		if p.GPU != nil {
			g = fmt.Sprint(p.GPU.Index)
		}
		out = append(out, p.Rule+"/"+g)
	}
	slices.Sort(out)
	return out
}

func problem(t testing.TB, res Result, rule string) Problem {
	t.Helper()
	for _, p := range res.Problems {
		if p.Rule == rule {
			return p
		}
	}
	t.Fatalf("no active problem of rule %s; active: %v", rule, active(res))
	return Problem{}
}

func condition(t testing.TB, res Result, typ string) ConditionStatus {
	t.Helper()
	c, ok := res.Condition(typ)
	if !ok {
		t.Fatalf("no condition %s in %+v", typ, res.Conditions)
	}
	return c
}

func mustLoad(t testing.TB, y string) *RuleSet {
	t.Helper()
	rs, err := Load([]byte(y))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return rs
}
