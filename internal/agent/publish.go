package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/analyzer"
)

// conditionPublisher keeps the agent's own conditions on its Node up to
// date. The newest desired state wins: while the API server is away the
// agent keeps evaluating, and the state of the moment it comes back is
// what gets written, retried with backoff.
type conditionPublisher struct {
	client rest.Interface
	node   string
	log    *slog.Logger
	now    func() time.Time

	mu      sync.Mutex
	desired []analyzer.ConditionStatus
	// extra are conditions from outside the rules (the failure predictor's
	// GPUFailurePredicted), by type, published with them.
	extra     map[string]analyzer.ConditionStatus
	published map[string]analyzer.ConditionStatus
	// warnings and warned: the same for the active-warnings annotation.
	warnings, warned int
	// advised is the recommended-actions annotation the node shows (JSON,
	// "" for none), valid once advisedKnown.
	advised      string
	advisedKnown bool
	// healthy is the desired gpu-healthy-count label; labelled what the
	// node shows (-1 before the first successful patch).
	healthy, labelled int
	wake              chan struct{}

	// carried holds, per condition type, the status and lastTransitionTime
	// the Node showed when this agent started, read once before the first
	// patch (seen says it was). While the status stays the same the old
	// time is kept: a restarted agent must not make an old problem look
	// new, or a repair controller would count it as a second incident.
	carried map[string]carriedCondition
	seen    bool
}

type carriedCondition struct {
	status string
	since  time.Time
}

func newConditionPublisher(c rest.Interface, node string, log *slog.Logger) *conditionPublisher {
	return &conditionPublisher{client: c, node: node, log: log, now: time.Now,
		published: map[string]analyzer.ConditionStatus{}, labelled: -1, warned: -1, wake: make(chan struct{}, 1)}
}

// set records the conditions and healthy GPU count the node should show
// and wakes the loop.
func (p *conditionPublisher) set(conds []analyzer.ConditionStatus, healthyGPUs, warnings int) {
	p.mu.Lock()
	p.desired = conds
	p.healthy = healthyGPUs
	p.warnings = warnings
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// setExtra records a condition that does not come from the rules and
// wakes the loop; a later call for the same type replaces it.
func (p *conditionPublisher) setExtra(c analyzer.ConditionStatus) {
	p.mu.Lock()
	if p.extra == nil {
		p.extra = map[string]analyzer.ConditionStatus{}
	}
	p.extra[c.Type] = c
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// run patches whenever the desired state differs from what the node shows.
func (p *conditionPublisher) run(ctx context.Context) {
	publishLoop(ctx, p.wake, p.sync, func(err error, in time.Duration) {
		p.log.Warn("publishing node conditions; will retry", "node", p.node, "in", in, "err", err)
	})
}

// publishLoop calls sync on every wake-up until ctx ends, retrying a
// failed sync with backoff from 200 ms to 5 s: one small PATCH every 5 s
// costs an API server that is away nothing, and bounds how late the state
// lands once it is back.
func publishLoop(ctx context.Context, wake <-chan struct{}, sync func(context.Context) error, failed func(err error, retryIn time.Duration)) {
	const minBackoff, maxBackoff = 200 * time.Millisecond, 5 * time.Second
	backoff := minBackoff
	var retry <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-wake:
		case <-retry:
		}
		retry = nil
		if err := sync(ctx); err != nil {
			failed(err, backoff)
			retry = time.After(backoff)
			backoff = min(2*backoff, maxBackoff)
			continue
		}
		backoff = minBackoff
	}
}

// sync patches what changed since the last success. The advice (the
// recommended-actions annotation) leads a condition turning unhealthy and
// trails it turning healthy, so that whoever sees an unhealthy condition
// finds its advice: the metadata patch with the advice of both the old
// and the new conditions comes first, the conditions next, and the advice
// of the new conditions alone last, when it differs.
func (p *conditionPublisher) sync(ctx context.Context) error {
	p.mu.Lock()
	wanted := p.wanted()
	var changed []analyzer.ConditionStatus
	for _, c := range wanted {
		if old, ok := p.published[c.Type]; !ok || old != c {
			changed = append(changed, c)
		}
	}
	shown := make([]analyzer.ConditionStatus, 0, len(p.published))
	for _, c := range p.published {
		shown = append(shown, c)
	}
	healthy, warnings := p.healthy, p.warnings
	p.mu.Unlock()

	advice := recommendedActions(wanted)
	if err := p.patchMetadata(ctx, healthy, warnings, mergeAdvice(recommendedActions(shown), advice)); err != nil {
		return err
	}
	if len(changed) > 0 {
		if err := p.readCarried(ctx); err != nil {
			return err
		}
		if err := patchConditions(ctx, p.client, p.node, p.withCarriedSince(changed), p.now()); err != nil {
			return err
		}
		p.mu.Lock()
		for _, c := range changed {
			p.published[c.Type] = c
		}
		p.mu.Unlock()
	}
	return p.patchMetadata(ctx, healthy, warnings, advice)
}

// patchMetadata writes the gpu-healthy-count label and the active-warnings
// and recommended-actions annotations in one merge patch, when any of them
// differs from what the node shows.
func (p *conditionPublisher) patchMetadata(ctx context.Context, healthy, warnings int, advice map[string]string) error {
	advised := ""
	if len(advice) > 0 {
		b, err := json.Marshal(advice)
		if err != nil {
			return fmt.Errorf("encoding the recommended actions of node %s: %w", p.node, err)
		}
		advised = string(b)
	}
	p.mu.Lock()
	same := healthy == p.labelled && warnings == p.warned && p.advisedKnown && advised == p.advised
	p.mu.Unlock()
	if same {
		return nil
	}
	// The controller's health score counts the warnings, its remediation
	// takes the advice; schedulers read the healthy GPU count.
	adviceValue := "null" // removes the annotation
	if advised != "" {
		adviceValue = strconv.Quote(advised)
	}
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q},"annotations":{%q:%q,%q:%s}}}`,
		v1alpha1.LabelGPUHealthyCount, strconv.Itoa(healthy),
		v1alpha1.AnnotationActiveWarnings, strconv.Itoa(warnings),
		v1alpha1.AnnotationRecommendedActions, adviceValue)
	err := p.client.Patch(types.MergePatchType).Resource("nodes").Name(p.node).Body([]byte(patch)).Do(ctx).Error()
	if err != nil {
		return fmt.Errorf("labelling node %s: %w", p.node, err)
	}
	p.mu.Lock()
	p.labelled, p.warned, p.advised, p.advisedKnown = healthy, warnings, advised, true
	p.mu.Unlock()
	return nil
}

// recommendedActions maps each unhealthy condition that recommends an
// action to that action (v1alpha1.AnnotationRecommendedActions).
func recommendedActions(conds []analyzer.ConditionStatus) map[string]string {
	out := map[string]string{}
	for _, c := range conds {
		if unhealthy(c) && c.Action != "" {
			out[c.Type] = string(c.Action)
		}
	}
	return out
}

// mergeAdvice is next with the entries of shown that next lacks: the
// advice of conditions that are about to turn healthy stays until they
// have.
func mergeAdvice(shown, next map[string]string) map[string]string {
	out := maps.Clone(next)
	for t, a := range shown {
		if _, ok := out[t]; !ok {
			out[t] = a
		}
	}
	return out
}

// unhealthy says whether a condition reports a problem: False for the
// rules' conditions (True means ready), True for GPUFailurePredicted.
func unhealthy(c analyzer.ConditionStatus) bool {
	if c.Type == v1alpha1.ConditionGPUFailurePredicted {
		return c.Status == analyzer.StatusTrue
	}
	return c.Status != analyzer.StatusTrue
}

// wanted is every condition the node should show; p.mu must be held.
func (p *conditionPublisher) wanted() []analyzer.ConditionStatus {
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
func (p *conditionPublisher) readCarried(ctx context.Context) error {
	if p.seen {
		return nil
	}
	var n kubeNode
	if err := getInto(ctx, p.client.Get().Resource("nodes").Name(p.node), &n); err != nil {
		return fmt.Errorf("reading node %s: %w", p.node, err)
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
func (p *conditionPublisher) withCarriedSince(conds []analyzer.ConditionStatus) []analyzer.ConditionStatus {
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

// patchConditions writes only our condition types with a strategic merge
// patch on nodes/status: the list merges by type, so the kubelet's and
// other agents' conditions stay untouched.
func patchConditions(ctx context.Context, c rest.Interface, node string, conds []analyzer.ConditionStatus, now time.Time) error {
	list := make([]nodeCondition, 0, len(conds))
	for _, s := range conds {
		since := s.LastTransitionTime
		if since.IsZero() {
			since = now
		}
		msg := s.Message
		switch {
		case s.Status == analyzer.StatusTrue && msg == "":
			msg = "gpuheal-agent: no problem"
		case unhealthy(s) && s.Action != "":
			// People read the condition, not our metrics: say what to do
			// (controllers read it from the recommended-actions annotation).
			msg += "; recommended action: " + string(s.Action)
		}
		list = append(list, nodeCondition{
			Type:               s.Type,
			Status:             s.Status,
			Reason:             reasonOrDefault(s),
			Message:            msg,
			LastHeartbeatTime:  metav1.NewTime(now),
			LastTransitionTime: metav1.NewTime(since),
		})
	}
	body, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": list}})
	if err != nil {
		return err
	}
	err = c.Patch(types.StrategicMergePatchType).Resource("nodes").Name(node).SubResource("status").
		Body(body).Do(ctx).Error()
	if err != nil {
		return fmt.Errorf("patching conditions of node %s: %w", node, err)
	}
	return nil
}

func reasonOrDefault(s analyzer.ConditionStatus) string {
	if s.Reason != "" {
		return s.Reason
	}
	if s.Status == analyzer.StatusTrue {
		return v1alpha1.ReasonNoProblemDetected
	}
	return v1alpha1.ReasonProblemDetected
}
