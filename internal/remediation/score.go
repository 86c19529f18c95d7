package remediation

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/audit"
	"github.com/gpuheal/gpuheal/internal/history"
	"github.com/gpuheal/gpuheal/internal/provider"
	"github.com/gpuheal/gpuheal/internal/score"
	"github.com/gpuheal/gpuheal/internal/score/tieraffinity"
)

var nodeHealthScore = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "gpuheal_node_health_score",
	Help: "Health score 0–100 of each GPU node: decayed incident history, current warnings and predicted risk (docs/health-score.md).",
}, []string{"node", "tier"})

// scorePublisher keeps every node's score current. Its history is the
// audit log: loaded from the store on start (so it survives restarts) and
// fed by the records this controller writes afterwards.
type scorePublisher struct {
	client client.Client // cached reads
	// writer patches nodes through its own rate limiter: publishing the
	// first scores of a large fleet is thousands of patches, and they must
	// not queue the cordons of the remediation reconcilers behind them.
	writer client.Client
	store  audit.Reader // nil: history starts empty
	scorer *score.Scorer
	every  time.Duration
	clock  clock.PassiveClock

	// providers, when set, protect gold nodes from scale-in (opt-in):
	// a shrinking group then removes the least trusted nodes first.
	providers provider.Set
	// taintBronze keeps the PreferNoSchedule taint of tieraffinity on
	// bronze nodes (and removes it from every other); off, it is removed
	// wherever this controller left it.
	taintBronze bool

	mu     sync.Mutex
	events map[string][]score.Event // node → incidents, one per Decided record
}

// NeedLeaderElection: only the leader writes labels.
func (s *scorePublisher) NeedLeaderElection() bool { return true }

// observe takes the controller's own records as they are written.
func (s *scorePublisher) observe(r audit.Record) {
	if r.Kind != audit.Decided {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events[r.Node] = append(s.events[r.Node], eventsOf(r)...)
}

// eventsOf turns one incident's decision into score events: one for the
// node (no GPU), and one per GPU the agent named. The node's score counts
// only the first kind, so an incident naming two GPUs weighs once.
func eventsOf(r audit.Record) []score.Event {
	class := history.Class(&r)
	out := []score.Event{{Time: r.Time, Class: class}}
	for _, g := range r.GPUs {
		out = append(out, score.Event{Time: r.Time, Class: class, GPU: g})
	}
	return out
}

func (s *scorePublisher) Start(ctx context.Context) error {
	if err := s.load(ctx); err != nil {
		// The scores then start from what this process sees; say so.
		log.FromContext(ctx).Error(err, "loading incident history for health scores")
	}
	t := time.NewTicker(s.every)
	defer t.Stop()
	for {
		if err := s.publish(ctx); err != nil && ctx.Err() == nil {
			log.FromContext(ctx).Error(err, "publishing health scores")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func (s *scorePublisher) load(ctx context.Context) error {
	if s.store == nil {
		return nil
	}
	recs, err := s.store.Query(ctx, audit.Filter{Since: s.clock.Now().Add(-s.scorer.Horizon()), Limit: -1})
	if err != nil {
		return fmt.Errorf("querying the audit store: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range recs {
		if r.Kind == audit.Decided {
			s.events[r.Node] = append(s.events[r.Node], eventsOf(r)...)
		}
	}
	return nil
}

// publish scores every node and patches those whose score or tier changed.
func (s *scorePublisher) publish(ctx context.Context) error {
	var nodes corev1.NodeList
	if err := s.client.List(ctx, &nodes, client.UnsafeDisableDeepCopy); err != nil {
		return err
	}
	now := s.clock.Now()
	nodeHealthScore.Reset()
	for i := range nodes.Items {
		n := &nodes.Items[i]
		in, gpuIn := s.input(n, now)
		res := s.scorer.Score(in, now)
		prev, _ := score.ParseTier(n.Labels[v1alpha1.LabelHealthTier])
		tier := s.scorer.TierWithHysteresis(prev, res.Score)
		nodeHealthScore.WithLabelValues(n.Name, string(tier)).Set(res.Score)
		gpus := gpuScoresText(s.scorer.ScoreGPUs(gpuIn, now))
		if s.providers != nil {
			s.protect(ctx, n, tier == score.Gold)
		}
		if n.Annotations[v1alpha1.AnnotationHealthScore] != res.ScoreText() || n.Labels[v1alpha1.LabelHealthTier] != string(tier) ||
			n.Annotations[v1alpha1.AnnotationGPUHealthScores] != gpus {
			if err := s.patch(ctx, n.Name, res.ScoreText(), string(tier), gpus); err != nil {
				return err
			}
		}
		// After the label: a node never carries the taint of a tier its
		// label does not show yet.
		s.syncTaint(ctx, n, s.taintBronze && tier == score.Bronze)
	}
	return nil
}

// input returns the node's scoring input (incidents, warnings, risk) and
// the per-GPU one (the incidents that named a GPU).
func (s *scorePublisher) input(n *corev1.Node, now time.Time) (score.Input, score.Input) {
	s.mu.Lock()
	evs := s.events[n.Name]
	// Forget what can no longer count.
	horizon := now.Add(-s.scorer.Horizon())
	kept := evs[:0]
	for _, e := range evs {
		if e.Time.After(horizon) {
			kept = append(kept, e)
		}
	}
	s.events[n.Name] = kept
	var in, gpus score.Input
	for _, e := range kept {
		if e.GPU == "" {
			in.Events = append(in.Events, e)
		} else {
			gpus.Events = append(gpus.Events, e)
		}
	}
	s.mu.Unlock()
	if v, err := strconv.ParseFloat(n.Annotations[v1alpha1.AnnotationFailureRisk], 64); err == nil {
		in.Risk = v
	}
	if v, err := strconv.Atoi(n.Annotations[v1alpha1.AnnotationActiveWarnings]); err == nil {
		in.Warnings = v
	}
	return in, gpus
}

// gpuScoresText is the per-GPU annotation: a JSON object UUID → score, or
// empty when no GPU of the node has a history.
func gpuScoresText(m map[string]score.Result) string {
	if len(m) == 0 {
		return ""
	}
	out := make(map[string]string, len(m))
	for k, r := range m {
		out[k] = r.ScoreText()
	}
	b, _ := json.Marshal(out) // map keys are sorted by encoding/json
	return string(b)
}

// patch writes the score as a merge patch of labels and annotations, which
// merge by key: no resourceVersion is needed and nothing else is touched.
func (s *scorePublisher) patch(ctx context.Context, node, scoreText, tier, gpus string) error {
	ann := map[string]any{v1alpha1.AnnotationHealthScore: scoreText, v1alpha1.AnnotationGPUHealthScores: nil}
	if gpus != "" {
		ann[v1alpha1.AnnotationGPUHealthScores] = gpus
	}
	body, _ := json.Marshal(map[string]any{"metadata": map[string]any{
		"labels":      map[string]string{v1alpha1.LabelHealthTier: tier},
		"annotations": ann,
	}})
	n := &corev1.Node{}
	n.Name = node
	if err := s.writer.Patch(ctx, n, client.RawPatch(types.MergePatchType, body)); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("publishing health score of node %s: %w", node, err)
	}
	return nil
}

// syncTaint gives n the bronze taint (want) or takes it off, leaving every
// other taint as it is. The taint list has no merge key, so the patch is
// the cordon's (patchNodeGuarded): it tests the taints it read, and when
// another writer changed them meanwhile the node is read again through the
// writer and the change applied again. A failure is logged and tried again
// at the next publication; the scores of the other nodes go on.
func (s *scorePublisher) syncTaint(ctx context.Context, n *corev1.Node, want bool) {
	if _, changed := withBronzeTaint(n.Spec.Taints, want); !changed {
		return
	}
	err := patchNodeGuarded(ctx, s.writer, s.writer, n.DeepCopy(), func(n *corev1.Node) bool {
		taints, changed := withBronzeTaint(n.Spec.Taints, want)
		n.Spec.Taints = taints
		return changed
	})
	if client.IgnoreNotFound(err) != nil && ctx.Err() == nil {
		log.FromContext(ctx).Error(err, "setting the health tier taint", "node", n.Name, "tainted", want)
	}
}

// withBronzeTaint is taints with exactly one bronze taint (want) or none,
// and whether that differs from taints. Other taints keep their order.
func withBronzeTaint(taints []corev1.Taint, want bool) ([]corev1.Taint, bool) {
	bronze := tieraffinity.BronzeTaint()
	ours, exact := 0, false
	for _, t := range taints {
		if tieraffinity.IsBronzeTaint(t) {
			ours++
			exact = exact || t.Effect == bronze.Effect && t.Value == bronze.Value
		}
	}
	if want && ours == 1 && exact || !want && ours == 0 {
		return taints, false
	}
	out := slices.DeleteFunc(slices.Clone(taints), tieraffinity.IsBronzeTaint)
	if want {
		out = append(out, bronze)
	}
	return out, true
}

// protect asks the node's provider to keep a gold node out of scale-in and
// to release any other, when that differs from what was last set. A
// provider that cannot (karpenter, clusterapi, none) is skipped quietly;
// a failure is logged and tried again at the next publication.
func (s *scorePublisher) protect(ctx context.Context, n *corev1.Node, want bool) {
	if n.Annotations[v1alpha1.AnnotationScaleInProtected] == strconv.FormatBool(want) {
		return
	}
	if !want && n.Annotations[v1alpha1.AnnotationScaleInProtected] == "" {
		return // never protected by us: nothing to undo
	}
	name := ""
	if pols, err := policiesFor(ctx, s.client, n); err == nil && len(pols) == 1 {
		name = pols[0].Spec.Provider
	}
	p, err := s.providers.For(name, n)
	if err != nil {
		return
	}
	sp, ok := p.(provider.ScaleInProtector)
	if !ok {
		return
	}
	if err := sp.SetScaleInProtection(ctx, n, want); err != nil {
		log.FromContext(ctx).Error(err, "setting scale-in protection", "node", n.Name, "protected", want)
		return
	}
	body, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
		v1alpha1.AnnotationScaleInProtected: strconv.FormatBool(want)}}})
	patch := &corev1.Node{}
	patch.Name = n.Name
	if err := s.writer.Patch(ctx, patch, client.RawPatch(types.MergePatchType, body)); client.IgnoreNotFound(err) != nil {
		log.FromContext(ctx).Error(err, "recording scale-in protection", "node", n.Name)
	}
}
