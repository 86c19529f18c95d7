//go:build integration

package remediation

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/audit"
	"github.com/gpuheal/gpuheal/internal/poll"
	"github.com/gpuheal/gpuheal/internal/score"
	"github.com/gpuheal/gpuheal/internal/score/tieraffinity"
	"github.com/gpuheal/gpuheal/internal/score/tieraffinity/tieraffinitytest"
	"github.com/gpuheal/gpuheal/internal/testenv"
	"github.com/gpuheal/gpuheal/internal/testenv/testcluster"
)

// otherTaint is someone else's taint, which the tier taint must never drop.
var otherTaint = corev1.Taint{Key: "example.com/dedicated", Value: "ml", Effect: corev1.TaintEffectNoSchedule}

// tierPublisher is the controller's score publisher on c, on a clock the
// test steps, with the bronze taint on.
func tierPublisher(c client.Client, clk *clocktesting.FakeClock) *scorePublisher {
	return &scorePublisher{client: c, writer: c, scorer: mustScorer(), every: time.Minute, clock: clk,
		events: map[string][]score.Event{}, taintBronze: true}
}

// decided feeds the publisher an incident of node, decided now.
func decided(s *scorePublisher, node, action string) {
	s.observe(audit.Record{Kind: audit.Decided, Node: node, Action: action, Time: s.clock.Now()})
}

// TestBronzeTaintFollowsTheTier: on a real API server, a node whose score
// falls to bronze gets the PreferNoSchedule taint, one that recovers loses
// it, a node never in bronze never gets it, and another writer's taint
// survives both, even one added between the publisher's read and its
// patch. Switched off, the taint is removed.
func TestBronzeTaintFollowsTheTier(t *testing.T) {
	t.Parallel()
	env := testcluster.Start(t, testenv.Options{})
	ctx, c := t.Context(), env.Client
	for _, name := range []string{"tier-falls", "tier-stays"} {
		n := testenv.GPUNode(name)
		n.Spec.Taints = []corev1.Taint{otherTaint}
		mustNil(t, c.Create(ctx, n))
	}
	check := func(name string, tier score.Tier, tainted bool) {
		t.Helper()
		wantTier(ctx, t, c, name, tier, tainted)
		if n := getNode(ctx, t, c, name); !hasTaintExactly(n, otherTaint) {
			t.Fatalf("%s: taints %v lost %s", name, n.Spec.Taints, otherTaint.ToString())
		}
	}
	clk := clocktesting.NewFakeClock(t0)
	s := tierPublisher(c, clk)
	mustNil(t, s.publish(ctx))
	check("tier-falls", score.Gold, false)
	check("tier-stays", score.Gold, false)

	decided(s, "tier-falls", string(v1alpha1.ActionReplace)) // 67.0: bronze
	decided(s, "tier-stays", string(v1alpha1.ActionReboot))  // 81.9: silver
	mustNil(t, s.publish(ctx))
	check("tier-falls", score.Bronze, true)
	check("tier-stays", score.Silver, false)
	mustNil(t, s.publish(ctx)) // nothing to change: no second taint
	check("tier-falls", score.Bronze, true)

	// Three days later the replace weighs 29.7 points: 74.3, silver
	// (past the 72.0 that hysteresis asks of a bronze node).
	clk.Step(3 * 24 * time.Hour)
	mustNil(t, s.publish(ctx))
	check("tier-falls", score.Silver, false)

	// Another writer adds a taint after the publisher read the node: the
	// guarded patch fails, is applied again on a fresh read, keeps both.
	var stale corev1.Node
	mustNil(t, c.Get(ctx, client.ObjectKey{Name: "tier-falls"}, &stale))
	late := corev1.Taint{Key: "example.com/late", Effect: corev1.TaintEffectPreferNoSchedule}
	var fresh corev1.Node
	mustNil(t, c.Get(ctx, client.ObjectKey{Name: "tier-falls"}, &fresh))
	fresh.Spec.Taints = append(fresh.Spec.Taints, late)
	mustNil(t, c.Update(ctx, &fresh))
	conflicts := testutil.ToFloat64(nodePatchConflicts)
	s.syncTaint(ctx, &stale, true)
	if testutil.ToFloat64(nodePatchConflicts) <= conflicts {
		t.Error("the patch on a stale read was not refused and retried")
	}
	n := getNode(ctx, t, c, "tier-falls")
	// (The API server's admission adds node.kubernetes.io/not-ready to a
	// new node; no kubelet here removes it: one more taint to keep.)
	if !hasTaintExactly(n, tieraffinity.BronzeTaint()) || !hasTaintExactly(n, late) || !hasTaintExactly(n, otherTaint) ||
		len(slices.DeleteFunc(slices.Clone(n.Spec.Taints), func(t corev1.Taint) bool { return !tieraffinity.IsBronzeTaint(t) })) != 1 {
		t.Fatalf("taints after a concurrent writer: %v, want %s, %s and the bronze taint", n.Spec.Taints, otherTaint.ToString(), late.ToString())
	}

	// Switched off: the next publication takes the taint away.
	s.taintBronze = false
	mustNil(t, s.publish(ctx))
	n = getNode(ctx, t, c, "tier-falls")
	if slices.ContainsFunc(n.Spec.Taints, tieraffinity.IsBronzeTaint) || !hasTaintExactly(n, late) || !hasTaintExactly(n, otherTaint) {
		t.Fatalf("taints with the taint switched off: %v, want only the others'", n.Spec.Taints)
	}
}

// TestTierSteersTheRealScheduler: the real kube-scheduler, given a gold, a
// silver and a bronze node (scored by the publisher, the bronze one
// tainted), places the page's "prefer healthier nodes" pod on the gold
// node, leaves its "gold or silver only" pod Pending while only the bronze
// node has room, and still places a preferring pod on the bronze node
// when nothing else has room: the taint is soft.
func TestTierSteersTheRealScheduler(t *testing.T) {
	t.Parallel()
	testcluster.RequireBinaries(t, true, true)
	pods, err := tieraffinitytest.DocPods(testcluster.RepoRoot(t))
	mustNil(t, err)
	prefer, critical := pods[tieraffinitytest.PreferHealthierPod], pods[tieraffinitytest.GoldOrSilverPod]
	if prefer == nil || critical == nil {
		t.Fatalf("%s lacks the pods %s and %s", tieraffinitytest.DocFile, tieraffinitytest.PreferHealthierPod, tieraffinitytest.GoldOrSilverPod)
	}

	env := testcluster.Start(t, testenv.Options{Kwok: true, Workloads: true})
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	c := env.Client
	nodes, err := testenv.CreateGPUNodes(ctx, c, "sched", 3)
	mustNil(t, err)
	mustNil(t, testenv.WaitNodesReady(ctx, c, nodes))
	gold, silver, bronze := nodes[0], nodes[1], nodes[2]
	s := tierPublisher(c, clocktesting.NewFakeClock(t0))
	decided(s, silver, string(v1alpha1.ActionReboot))
	decided(s, bronze, string(v1alpha1.ActionReplace))
	mustNil(t, s.publish(ctx))
	wantTier(ctx, t, c, gold, score.Gold, false)
	wantTier(ctx, t, c, silver, score.Silver, false)
	wantTier(ctx, t, c, bronze, score.Bronze, true)

	mustNil(t, c.Create(ctx, docPod(prefer, prefer.Name)))
	if p := waitScheduled(ctx, t, c, prefer.Name); p.Spec.NodeName != gold {
		t.Fatalf("the preferring pod went to %s, want the gold node %s", p.Spec.NodeName, gold)
	}
	// The gold node is full now; fill the silver one too.
	filler := docPod(prefer, "silver-filler")
	filler.Spec.Affinity, filler.Spec.NodeName = nil, silver
	mustNil(t, c.Create(ctx, filler))

	mustNil(t, c.Create(ctx, docPod(critical, critical.Name)))
	mustNil(t, poll.Until(ctx, "the critical pod unschedulable", 200*time.Millisecond, func(ctx context.Context) (bool, error) {
		var p corev1.Pod
		if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: critical.Name}, &p); err != nil {
			return false, err
		}
		if p.Spec.NodeName != "" {
			return false, fmt.Errorf("scheduled onto %s, with only the bronze node free", p.Spec.NodeName)
		}
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse && cond.Reason == corev1.PodReasonUnschedulable {
				return true, nil
			}
		}
		return false, nil
	}))

	mustNil(t, c.Create(ctx, docPod(prefer, "prefer-second")))
	if p := waitScheduled(ctx, t, c, "prefer-second"); p.Spec.NodeName != bronze {
		t.Fatalf("the second preferring pod went to %s, want the bronze node %s, the only one with room", p.Spec.NodeName, bronze)
	}
	var p corev1.Pod
	mustNil(t, c.Get(ctx, client.ObjectKey{Namespace: "default", Name: critical.Name}, &p))
	if p.Spec.NodeName != "" {
		t.Errorf("the critical pod was scheduled onto %s", p.Spec.NodeName)
	}
}

// docPod is the page's pod under name in namespace default, with its GPUs
// requested as well as limited (kwok runs it at once either way).
func docPod(doc *corev1.Pod, name string) *corev1.Pod {
	p := doc.DeepCopy()
	p.Name, p.Namespace = name, "default"
	p.Spec.TerminationGracePeriodSeconds = new(int64)
	gpus := resource.MustParse("8")
	p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{testenv.GPUResource: gpus}
	return p
}

func getNode(ctx context.Context, t *testing.T, c client.Client, name string) *corev1.Node {
	t.Helper()
	var n corev1.Node
	mustNil(t, c.Get(ctx, client.ObjectKey{Name: name}, &n))
	return &n
}

// wantTier checks the node's tier label and whether it carries the bronze
// taint, once.
func wantTier(ctx context.Context, t *testing.T, c client.Client, name string, tier score.Tier, tainted bool) {
	t.Helper()
	n := getNode(ctx, t, c, name)
	if got := n.Labels[v1alpha1.LabelHealthTier]; got != string(tier) {
		t.Fatalf("%s: tier %q, want %q", name, got, tier)
	}
	ours := slices.DeleteFunc(slices.Clone(n.Spec.Taints), func(t corev1.Taint) bool { return !tieraffinity.IsBronzeTaint(t) })
	if tainted && (len(ours) != 1 || !hasTaintExactly(n, tieraffinity.BronzeTaint())) || !tainted && len(ours) != 0 {
		t.Fatalf("%s (%s): taints %v, want the bronze taint %v", name, tier, n.Spec.Taints, tainted)
	}
}

func hasTaintExactly(n *corev1.Node, want corev1.Taint) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool {
		return t.Key == want.Key && t.Value == want.Value && t.Effect == want.Effect
	})
}
