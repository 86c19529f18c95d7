package nodestatus

import (
	"context"
	"fmt"
	"log/slog"

	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/gpuheal/gpuheal/internal/analyzer"
	"github.com/gpuheal/gpuheal/internal/finding"
)

// WarningEvents turns warning problems into Events on the agent's Node,
// aggregated: one Event per problem (rule and GPU), emitted when the
// problem becomes active and counted up when it comes back, never one per
// kernel-log line or per evaluation.
type WarningEvents struct {
	events  *Events
	log     *slog.Logger
	active  map[string]bool // problem keys active at the last evaluation
	results chan analyzer.Result
}

// NewWarningEvents returns the warning Events of node; Run starts it.
func NewWarningEvents(c rest.Interface, node string, clk clock.PassiveClock, log *slog.Logger) *WarningEvents {
	return &WarningEvents{events: NewEvents(c, node, clk), log: log,
		active: map[string]bool{}, results: make(chan analyzer.Result, 1)}
}

// Offer hands over the newest result without ever blocking the analyzer:
// a slow or absent API server delays Events, never conditions. Results in
// between may be skipped; a problem active in the newest one is not lost.
func (w *WarningEvents) Offer(r analyzer.Result) {
	for {
		select {
		case w.results <- r:
			return
		default:
			select {
			case <-w.results:
			default:
			}
		}
	}
}

// Run emits the Events of each offered result until ctx ends.
func (w *WarningEvents) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case r := <-w.results:
			w.observe(ctx, r)
		}
	}
}

// observe emits an Event for each warning problem that was not active in
// the previous result.
func (w *WarningEvents) observe(ctx context.Context, r analyzer.Result) {
	now := map[string]bool{}
	for i := range r.Problems {
		p := &r.Problems[i]
		if p.Severity != finding.Warning {
			continue
		}
		key := problemKey(p)
		now[key] = true
		if w.active[key] {
			continue
		}
		if err := w.emit(ctx, key, p); err != nil {
			w.log.Warn("emitting node event", "node", w.events.node, "reason", p.Reason, "err", err)
		}
	}
	w.active = now
}

func problemKey(p *analyzer.Problem) string {
	gpu := "node"
	if p.GPU != nil {
		gpu = p.GPU.PCIBusID
	}
	return p.Rule + "/" + gpu + "/" + p.Code
}

// emit creates the problem's Event, or counts up the existing one.
func (w *WarningEvents) emit(ctx context.Context, key string, p *analyzer.Problem) error {
	return w.events.Emit(ctx, key, p.Reason, fmt.Sprintf("%s (recommended action: %s)", p.Message, p.Action))
}
