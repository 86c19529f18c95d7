package agent

import (
	"context"
	"fmt"
	"log/slog"

	"k8s.io/client-go/rest"

	"github.com/gpuheal/gpuheal/internal/analyzer"
	"github.com/gpuheal/gpuheal/internal/finding"
)

// eventNamespace is where node events live (the kubelet's choice too), so
// `kubectl describe node` shows them.
const eventNamespace = "default"

// warningEvents turns warning problems into Events on the agent's Node,
// aggregated: one Event per problem (rule and GPU), emitted when the
// problem becomes active and counted up when it comes back, never one per
// kernel-log line or per evaluation.
type warningEvents struct {
	events  *nodeEvents
	log     *slog.Logger
	active  map[string]bool // problem keys active at the last evaluation
	results chan analyzer.Result
}

func newWarningEvents(c rest.Interface, node string, log *slog.Logger) *warningEvents {
	return &warningEvents{events: newNodeEvents(c, node), log: log,
		active: map[string]bool{}, results: make(chan analyzer.Result, 1)}
}

// offer hands over the newest result without ever blocking the analyzer:
// a slow or absent API server delays Events, never conditions. Results in
// between may be skipped; a problem active in the newest one is not lost.
func (w *warningEvents) offer(r analyzer.Result) {
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

func (w *warningEvents) run(ctx context.Context) {
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
func (w *warningEvents) observe(ctx context.Context, r analyzer.Result) {
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
func (w *warningEvents) emit(ctx context.Context, key string, p *analyzer.Problem) error {
	return w.events.emit(ctx, key, p.Reason, fmt.Sprintf("%s (recommended action: %s)", p.Message, p.Action))
}
