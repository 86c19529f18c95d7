package nodestatus

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/agent/kubecore"
	"github.com/gpuheal/gpuheal/internal/analyzer"
)

// Conditions keeps the agent's own conditions on its Node up to date,
// with the healthy-GPU label and the warnings, advice and checks-report
// annotations beside them (and, with GateJoin, the health gate's join
// taint before its first write). The newest desired state wins: while
// the API server is away the agent keeps evaluating, and the state of the
// moment it comes back is what gets written, retried with backoff.
type Conditions struct {
	client rest.Interface
	node   string
	log    *slog.Logger
	clock  clock.Clock
	// types are the names the rules' GPU and kernel conditions are
	// published under (PublishAs).
	types v1alpha1.AgentConditionTypes

	mu      sync.Mutex
	desired []analyzer.ConditionStatus
	// extra are conditions from outside the rules (the failure predictor's
	// GPUFailurePredicted), by type, published with them.
	extra     map[string]analyzer.ConditionStatus
	published map[string]analyzer.ConditionStatus
	// warnings and warned: the same for the active-warnings annotation.
	warnings, warned int
	// healthy is the desired gpu-healthy-count label; labelled what the
	// node shows (-1 before the first successful patch).
	healthy, labelled int
	// evaluated says the rules have spoken (Set was called): until then
	// nothing is written, or a restarted agent would clear the advice, the
	// healthy count and the warnings the node still shows for its old
	// conditions.
	evaluated bool
	// advised is the recommended-actions annotation the node shows (JSON,
	// "" for none), valid once advisedKnown.
	advised      string
	advisedKnown bool
	// faults is the gpu-faults annotation (SetGPUFaults).
	faults gpuFaults
	wake   chan struct{}
	// observer sees the outcome of each sync (ObserveSync).
	observer func(error)

	// carried holds, per condition type, the status and lastTransitionTime
	// the Node showed when this agent started, read once before the first
	// condition patch (seen says it was). While the status stays the same
	// the old time is kept: a restarted agent must not make an old problem
	// look new, or a repair controller would count it as a second incident.
	carried map[string]carriedCondition
	seen    bool

	// checks is the agent's checks report to publish (nil: none yet, or
	// the report is off), written with the metadata when it judges
	// otherwise than shownChecks or shownAt is checksEvery old.
	checks      *v1alpha1.AgentChecks
	shownChecks *v1alpha1.AgentChecks
	shownAt     time.Time
	checksEvery time.Duration
	// joinGate: taint a never-validated Node before the first metadata
	// write (TaintNeverValidated); joined says that is done.
	joinGate, joined bool
}

type carriedCondition struct {
	status string
	since  time.Time
}

// NewConditions returns the publisher for node; Run starts it.
func NewConditions(c rest.Interface, node string, clk clock.Clock, log *slog.Logger) *Conditions {
	own, _ := v1alpha1.AgentConditionTypesFor(v1alpha1.ConditionTypesGPUHeal)
	return &Conditions{client: c, node: node, log: log, clock: clk, types: own,
		published: map[string]analyzer.ConditionStatus{}, labelled: -1, warned: -1, wake: make(chan struct{}, 1)}
}

// PublishAs has the rules' GPU and kernel conditions written under the
// type names t (gpuheal's own by default; the EKS names on opt-in). Call
// it before Run.
func (p *Conditions) PublishAs(t v1alpha1.AgentConditionTypes) {
	p.mu.Lock()
	p.types = t
	p.mu.Unlock()
}

// Set records the rules' conditions, the healthy GPU count and the number
// of active warnings the node should show, and wakes the loop.
func (p *Conditions) Set(conds []analyzer.ConditionStatus, healthyGPUs, warnings int) {
	p.mu.Lock()
	p.desired = renamed(conds, p.types)
	p.healthy = healthyGPUs
	p.warnings = warnings
	p.evaluated = true
	p.mu.Unlock()
	poke(p.wake)
}

// SetExtra records a condition that does not come from the rules and
// wakes the loop; a later call for the same type replaces it.
func (p *Conditions) SetExtra(c analyzer.ConditionStatus) {
	p.mu.Lock()
	if p.extra == nil {
		p.extra = map[string]analyzer.ConditionStatus{}
	}
	p.extra[c.Type] = c
	p.mu.Unlock()
	poke(p.wake)
}

// renamed returns conds with gpuheal's condition types as t names them;
// a healthy condition's reason follows its type.
func renamed(conds []analyzer.ConditionStatus, t v1alpha1.AgentConditionTypes) []analyzer.ConditionStatus {
	out := make([]analyzer.ConditionStatus, len(conds))
	for i, c := range conds {
		if to := t.Publish(c.Type); to != c.Type {
			if c.Reason == analyzer.ReadyReason(c.Type) {
				c.Reason = analyzer.ReadyReason(to)
			}
			c.Type = to
		}
		out[i] = c
	}
	return out
}

// ObserveSync has fn called with the outcome (nil on success) of every
// write to the Node: the agent's readiness follows it.
func (p *Conditions) ObserveSync(fn func(error)) {
	p.mu.Lock()
	p.observer = fn
	p.mu.Unlock()
}

// Run patches whenever the desired state differs from what the node
// shows, until ctx ends.
func (p *Conditions) Run(ctx context.Context) {
	sync := func(ctx context.Context) error {
		err := p.sync(ctx)
		p.mu.Lock()
		fn := p.observer
		p.mu.Unlock()
		if fn != nil {
			fn(err)
		}
		return err
	}
	retryLoop(ctx, p.clock, p.wake, sync, func(err error, in time.Duration) {
		p.log.Warn("publishing node conditions; will retry", "node", p.node, "in", in, "err", err)
	})
}

// sync patches what changed since the last success. The advice (the
// recommended-actions annotation) and the GPU fault report lead a condition turning unhealthy and
// trails it turning healthy, so that whoever sees an unhealthy condition
// finds its advice: the metadata patch with the advice of both the old
// and the new conditions comes first, the conditions next, and the advice
// of the new conditions alone last, when it differs. A failed metadata
// patch does not hold the conditions back (a policy that refused the
// labels must not hide a sick GPU): they are written, and the advice is
// retried; repair controllers wait a condition's For duration, far longer
// than the retry.
func (p *Conditions) sync(ctx context.Context) error {
	p.mu.Lock()
	if !p.evaluated {
		p.mu.Unlock()
		return nil
	}
	wanted := p.wanted()
	var changed []analyzer.ConditionStatus
	for _, c := range wanted {
		if old, ok := p.published[c.Type]; !ok || old != c {
			changed = append(changed, c)
		}
	}
	shown := slices.Collect(maps.Values(p.published))
	healthy, warnings, faults := p.healthy, p.warnings, p.faults
	p.mu.Unlock()

	advice := recommendedActions(wanted)
	metaErr := p.joinTaint(ctx)
	if err := p.patchMetadata(ctx, healthy, warnings, mergeAdvice(recommendedActions(shown), advice), leadingFaults(faults)); metaErr == nil {
		metaErr = err
	}
	if len(changed) > 0 {
		if err := p.readCarried(ctx); err != nil {
			return err
		}
		if err := PatchConditions(ctx, p.client, p.node, p.withCarriedSince(changed), p.clock.Now()); err != nil {
			return err
		}
		p.mu.Lock()
		for _, c := range changed {
			p.published[c.Type] = c
		}
		p.mu.Unlock()
	}
	if metaErr != nil {
		return metaErr
	}
	return p.patchMetadata(ctx, healthy, warnings, advice, faults.wanted)
}

// wanted is every condition the node should show; p.mu must be held.
func (p *Conditions) wanted() []analyzer.ConditionStatus {
	if len(p.extra) == 0 {
		return p.desired
	}
	all := append([]analyzer.ConditionStatus(nil), p.desired...)
	for _, t := range slices.Sorted(maps.Keys(p.extra)) {
		all = append(all, p.extra[t])
	}
	return all
}

// readCarried reads, once, the Node's current conditions.
func (p *Conditions) readCarried(ctx context.Context) error {
	if p.seen {
		return nil
	}
	n, err := kubecore.GetNode(ctx, p.client, p.node)
	if err != nil {
		return fmt.Errorf("reading the conditions the node shows: %w", err)
	}
	p.carried = map[string]carriedCondition{}
	// Every type is kept: only those this agent publishes are ever looked
	// up, and some (the predictor's) may come after the first patch.
	for _, c := range n.Status.Conditions {
		p.carried[c.Type] = carriedCondition{status: c.Status, since: c.LastTransitionTime.Time}
	}
	p.seen = true
	return nil
}

// withCarriedSince returns conds with the carried lastTransitionTime where
// the status has not changed since the agent started; a condition whose
// status did change forgets what it carried.
func (p *Conditions) withCarriedSince(conds []analyzer.ConditionStatus) []analyzer.ConditionStatus {
	out := make([]analyzer.ConditionStatus, len(conds))
	for i, c := range conds {
		if old, ok := p.carried[c.Type]; ok {
			if old.status == c.Status && !old.since.IsZero() {
				c.LastTransitionTime = old.since
			} else {
				delete(p.carried, c.Type)
			}
		}
		out[i] = c
	}
	return out
}
