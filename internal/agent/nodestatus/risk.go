package nodestatus

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
)

// maxPendingWarnings bounds the Events waiting for an API server that is
// away; the oldest are dropped (the annotation still carries the risk).
const maxPendingWarnings = 64

// Warning is one warning Event to send: Key names the problem, so that it
// coming back counts up its one Event.
type Warning struct {
	Key, Reason, Message string
}

// Risk keeps the failure-risk annotation (v1alpha1.AnnotationFailureRisk,
// which the controller's health score reads; absent means unknown) on the
// agent's Node and sends the predictor's warnings as Events, in the
// background: the collection loop only hands over the newest state. The
// annotation is patched only when its two-decimal value changes; failures
// are retried with backoff, as Conditions does.
type Risk struct {
	client rest.Interface
	node   string
	log    *slog.Logger
	clock  clock.Clock
	events *Events

	mu sync.Mutex
	// desired is the annotation value the node should show, "" for none
	// (the predictor is off: a value left by an earlier run would keep
	// counting in the health score); published is what a successful patch
	// last wrote, valid when synced.
	desired, published string
	synced             bool
	warnings           []Warning
	wake               chan struct{}
}

// NewRisk returns the risk publisher of node; Run starts it.
func NewRisk(c rest.Interface, node string, clk clock.Clock, log *slog.Logger) *Risk {
	return &Risk{client: c, node: node, log: log, clock: clk, events: NewEvents(c, node, clk), wake: make(chan struct{}, 1)}
}

// Set records the node's highest risk and new warnings; it never blocks.
func (p *Risk) Set(maxRisk float64, warnings []Warning) {
	p.mu.Lock()
	p.desired = strconv.FormatFloat(maxRisk, 'f', 2, 64)
	p.warnings = append(p.warnings, warnings...)
	if n := len(p.warnings) - maxPendingWarnings; n > 0 {
		p.log.Warn("dropping failure-prediction events the API server has not taken", "node", p.node, "dropped", n)
		p.warnings = append(p.warnings[:0], p.warnings[n:]...)
	}
	p.mu.Unlock()
	poke(p.wake)
}

// RemoveStale removes a risk an earlier run left on the node, for when
// the predictor is off and Set is never called.
func (p *Risk) RemoveStale() { poke(p.wake) }

// Run syncs on every change until ctx ends, retrying while the API server
// fails.
func (p *Risk) Run(ctx context.Context) {
	retryLoop(ctx, p.clock, p.wake, p.sync, func(err error, in time.Duration) {
		p.log.Warn("publishing the failure risk; will retry", "node", p.node, "in", in, "err", err)
	})
}

func (p *Risk) sync(ctx context.Context) error {
	p.mu.Lock()
	desired, stale := p.desired, !p.synced || p.desired != p.published
	p.mu.Unlock()
	if stale {
		if err := PatchRiskAnnotation(ctx, p.client, p.node, desired); err != nil {
			return err
		}
		p.mu.Lock()
		p.published, p.synced = desired, true
		p.mu.Unlock()
	}
	for {
		p.mu.Lock()
		if len(p.warnings) == 0 {
			p.mu.Unlock()
			return nil
		}
		w := p.warnings[0]
		p.mu.Unlock()
		if err := p.events.Emit(ctx, w.Reason+"/"+w.Key, w.Reason, w.Message); err != nil {
			return fmt.Errorf("emitting %s event %s: %w", w.Reason, w.Key, err)
		}
		p.mu.Lock()
		p.warnings = p.warnings[1:]
		p.mu.Unlock()
	}
}

// PatchRiskAnnotation sets the annotation with a merge patch that touches
// nothing else; "" removes it.
func PatchRiskAnnotation(ctx context.Context, c rest.Interface, node, value string) error {
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
