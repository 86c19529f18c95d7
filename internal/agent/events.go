package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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
	client rest.Interface
	node   string
	log    *slog.Logger
	now    func() time.Time

	nodeUID types.UID
	active  map[string]bool // problem keys active at the last evaluation
	results chan analyzer.Result
}

func newWarningEvents(c rest.Interface, node string, log *slog.Logger) *warningEvents {
	return &warningEvents{client: c, node: node, log: log, now: time.Now,
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
			w.log.Warn("emitting node event", "node", w.node, "reason", p.Reason, "err", err)
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

// emit creates the problem's Event, or counts up the existing one: the
// name is derived from node and problem, so a recurrence finds it.
func (w *warningEvents) emit(ctx context.Context, key string, p *analyzer.Problem) error {
	if w.nodeUID == "" {
		var n corev1.Node
		if err := w.client.Get().Resource("nodes").Name(w.node).Do(ctx).Into(&n); err != nil {
			return fmt.Errorf("getting node %s: %w", w.node, err)
		}
		w.nodeUID = n.UID
	}
	sum := sha256.Sum256([]byte(key))
	name := w.node + ".gpuheal." + hex.EncodeToString(sum[:6])
	ts := metav1.NewTime(w.now())
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: name, Namespace: eventNamespace},
		InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: w.node, UID: w.nodeUID, APIVersion: "v1"},
		Reason:         p.Reason,
		Message:        fmt.Sprintf("%s (recommended action: %s)", p.Message, p.Action),
		Type:           corev1.EventTypeWarning,
		Source:         corev1.EventSource{Component: "gpuheal-agent", Host: w.node},
		FirstTimestamp: ts, LastTimestamp: ts, Count: 1,
	}
	err := w.client.Post().Namespace(eventNamespace).Resource("events").Body(ev).Do(ctx).Error()
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	var old corev1.Event
	if err := w.client.Get().Namespace(eventNamespace).Resource("events").Name(name).Do(ctx).Into(&old); err != nil {
		return err
	}
	patch := fmt.Sprintf(`{"count":%s,"lastTimestamp":%q,"message":%q}`,
		strconv.Itoa(int(old.Count)+1), ts.UTC().Format(time.RFC3339), ev.Message)
	return w.client.Patch(types.MergePatchType).Namespace(eventNamespace).Resource("events").Name(name).
		Body([]byte(patch)).Do(ctx).Error()
}
