package nodestatus

import (
	"context"
	"time"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/gpucheck"
)

// ReportChecksEvery turns on the agent's checks report
// (v1alpha1.AnnotationAgentChecks): written with the metadata whenever a
// result changes and at least every d, so that the controller's health
// gate can tell a fresh report from one left by a stopped agent. Call it
// before Run; d 0 leaves the report off.
func (p *Conditions) ReportChecksEvery(d time.Duration) {
	p.mu.Lock()
	p.checksEvery = d
	p.mu.Unlock()
}

// SetChecks records the newest checks report and wakes the loop; it is
// dropped while the report is off.
func (p *Conditions) SetChecks(r v1alpha1.AgentChecks) {
	p.mu.Lock()
	if p.checksEvery <= 0 {
		p.mu.Unlock()
		return
	}
	p.checks = &r
	p.mu.Unlock()
	poke(p.wake)
}

// GateJoin has the first sync taint a never-validated Node with
// v1alpha1.TaintValidating (TaintNeverValidated). Call it before Run.
func (p *Conditions) GateJoin() {
	p.mu.Lock()
	p.joinGate = true
	p.mu.Unlock()
}

// checksDue is the report to write now, nil when the node shows one that
// judges the same and is younger than checksEvery; p.mu must be held.
func (p *Conditions) checksDue(now time.Time) *v1alpha1.AgentChecks {
	switch {
	case p.checks == nil:
		return nil
	case p.shownChecks == nil || !gpucheck.Equal(*p.checks, *p.shownChecks) || now.Sub(p.shownAt) >= p.checksEvery:
		return p.checks
	}
	return nil
}

// joinTaint runs the join gate once, until it succeeded.
func (p *Conditions) joinTaint(ctx context.Context) error {
	p.mu.Lock()
	due := p.joinGate && !p.joined
	p.mu.Unlock()
	if !due {
		return nil
	}
	added, err := TaintNeverValidated(ctx, p.client, p.node)
	if err != nil {
		return err
	}
	if added {
		p.log.Info("node never validated: tainted until the health gate's checks pass", "node", p.node, "taint", v1alpha1.TaintValidating)
	}
	p.mu.Lock()
	p.joined = true
	p.mu.Unlock()
	return nil
}
