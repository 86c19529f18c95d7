package agent

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
)

// maxPendingAlarms bounds the Events waiting for an API server that is
// away; the oldest are dropped (the annotation still carries the risk).
const maxPendingAlarms = 64

// riskPublisher keeps the risk annotation (v1alpha1.AnnotationFailureRisk,
// which the controller's health score reads; absent means unknown) on the agent's Node and sends
// the alarms as warning Events, in the background: the collection loop
// only hands over the newest state. The annotation is patched only when
// its two-decimal value changes; failures are retried with backoff, as
// the condition publisher does.
type riskPublisher struct {
	client rest.Interface
	node   string
	log    *slog.Logger
	events *nodeEvents

	mu sync.Mutex
	// desired is the annotation value the node should show, "" for none
	// (the predictor is off: a value left by an earlier run would keep
	// counting in the health score); published is what a successful patch
	// last wrote, valid when synced.
	desired, published string
	synced             bool
	alarms             []riskAlarm
	wake               chan struct{}
}

func newRiskPublisher(c rest.Interface, node string, log *slog.Logger) *riskPublisher {
	return &riskPublisher{client: c, node: node, log: log, events: newNodeEvents(c, node), wake: make(chan struct{}, 1)}
}

// set records the node's highest risk and new alarms; it never blocks.
func (p *riskPublisher) set(maxRisk float64, alarms []riskAlarm) {
	p.mu.Lock()
	p.desired = strconv.FormatFloat(maxRisk, 'f', 2, 64)
	p.alarms = append(p.alarms, alarms...)
	if n := len(p.alarms) - maxPendingAlarms; n > 0 {
		p.log.Warn("dropping failure-prediction events the API server has not taken", "node", p.node, "dropped", n)
		p.alarms = append(p.alarms[:0], p.alarms[n:]...)
	}
	p.mu.Unlock()
	p.poke()
}

func (p *riskPublisher) poke() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// run syncs on every change until ctx ends, retrying while the API
// server fails.
func (p *riskPublisher) run(ctx context.Context) {
	publishLoop(ctx, p.wake, p.sync, func(err error, in time.Duration) {
		p.log.Warn("publishing the failure risk; will retry", "node", p.node, "in", in, "err", err)
	})
}

func (p *riskPublisher) sync(ctx context.Context) error {
	p.mu.Lock()
	desired, stale := p.desired, !p.synced || p.desired != p.published
	p.mu.Unlock()
	if stale {
		if err := patchRiskAnnotation(ctx, p.client, p.node, desired); err != nil {
			return err
		}
		p.mu.Lock()
		p.published, p.synced = desired, true
		p.mu.Unlock()
	}
	for {
		p.mu.Lock()
		if len(p.alarms) == 0 {
			p.mu.Unlock()
			return nil
		}
		a := p.alarms[0]
		p.mu.Unlock()
		if err := p.events.emit(ctx, v1alpha1.EventReasonGPUFailurePredicted+"/"+a.key, v1alpha1.EventReasonGPUFailurePredicted, a.message()); err != nil {
			return fmt.Errorf("emitting %s event for GPU %d: %w", v1alpha1.EventReasonGPUFailurePredicted, a.index, err)
		}
		p.mu.Lock()
		p.alarms = p.alarms[1:]
		p.mu.Unlock()
	}
}

func (a riskAlarm) message() string {
	return fmt.Sprintf("GPU %d (%s): predicted failure risk %.3f is at or above the threshold %.3f; "+
		"the failure model expects it may fail within %d minutes. Warning only: gpuheal starts no repair for a prediction.",
		a.index, a.uuid, a.risk, a.threshold, int(a.horizon.Minutes()))
}

// patchRiskAnnotation sets the annotation with a merge patch that touches
// nothing else; "" removes it.
func patchRiskAnnotation(ctx context.Context, c rest.Interface, node, value string) error {
	v := "null"
	if value != "" {
		v = strconv.Quote(value)
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%s}}}`, v1alpha1.AnnotationFailureRisk, v)
	if err := c.Patch(types.MergePatchType).Resource("nodes").Name(node).Body([]byte(patch)).Do(ctx).Error(); err != nil {
		return fmt.Errorf("annotating node %s with %s: %w", node, v1alpha1.AnnotationFailureRisk, err)
	}
	return nil
}
