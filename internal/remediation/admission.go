package remediation

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
)

// fleetView is a policy's nodes as last counted.
type fleetView struct {
	policy       string
	matched      int
	unhealthy    int
	maxUnhealthy int
	at           time.Time
}

func (v fleetView) breakerOpen() bool { return v.unhealthy > v.maxUnhealthy }

func (v fleetView) breakerMessage() string {
	return fmt.Sprintf("%d of %d nodes are unhealthy or held out of service, more than maxUnhealthy (%d): no new remediation starts until the fleet recovers",
		v.unhealthy, v.matched, v.maxUnhealthy)
}

// heldOutOfService reports whether gpuheal holds the node out of service:
// cordoned or tainted by an incident of any action and phase (CordonOnly, a
// prediction, a failed repair left for a person), whatever its conditions
// say now. Such a node serves no work, so the breaker counts it.
func heldOutOfService(n *corev1.Node) bool {
	return n.Annotations[v1alpha1.AnnotationCordonedBy] != "" || hasTaint(n)
}

// fleetCounter counts matched and unhealthy nodes per policy from the
// cache. Counting 5,000 nodes for every held incident would cost seconds of
// CPU, so a count is reused for maxAge.
type fleetCounter struct {
	client client.Reader
	clock  clock.PassiveClock
	maxAge time.Duration

	mu    sync.Mutex
	views map[string]fleetView
}

func (f *fleetCounter) view(ctx context.Context, p *policy) (fleetView, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if v, ok := f.views[p.Name]; ok && f.clock.Since(v.at) < f.maxAge {
		v.maxUnhealthy = p.maxUnhealthy(v.matched) // the policy may have changed
		return v, nil
	}
	var nodes corev1.NodeList
	// Read-only: skipping the deep copy of thousands of nodes per count.
	if err := f.client.List(ctx, &nodes, client.UnsafeDisableDeepCopy); err != nil {
		return fleetView{}, fmt.Errorf("listing nodes: %w", err)
	}
	v := fleetView{policy: p.Name, at: f.clock.Now()}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if !p.matches(n) {
			continue
		}
		v.matched++
		if !inDriverUpgrade(n) && (p.unhealthyNow(n) != nil || heldOutOfService(n)) {
			v.unhealthy++
		}
	}
	v.maxUnhealthy = p.maxUnhealthy(v.matched)
	if f.views == nil {
		f.views = map[string]fleetView{}
	}
	f.views[p.Name] = v
	unhealthyNodes.WithLabelValues(p.Name).Set(float64(v.unhealthy))
	breakerOpen.WithLabelValues(p.Name).Set(boolFloat(v.breakerOpen()))
	return v, nil
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// slotCounter counts a policy's incidents in flight. The cache can lag our
// own writes by a few milliseconds; incidents admitted (reserved) here are
// counted until the cache shows them, so a lagging cache can never let more than
// maxParallel start. (A lagging cache can only over-count finished ones,
// which errs on the safe side.)
type slotCounter struct {
	mu      sync.Mutex
	pending map[string]map[string]bool // policy → incidents admitted, not yet seen active in the cache
}

// active counts the policy's incidents in flight, including those reserved
// here and not yet seen active in the cache. Admission calls it with
// admitMu held and reserves before releasing it, so two admissions can never
// both take the last slot.
// except names an incident not to count (the one asking for a slot: a
// reservation it kept from a failed attempt must not block itself).
func (s *slotCounter) active(ctx context.Context, c client.Reader, policy, except string) (int, error) {
	var list v1alpha1.NodeRemediationList
	if err := c.List(ctx, &list, client.MatchingLabels{v1alpha1.LabelPolicy: policy}); err != nil {
		return 0, fmt.Errorf("listing remediations of policy %s: %w", policy, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	mine := s.pending[policy]
	n := 0
	for _, it := range list.Items {
		switch {
		case it.Name == except:
			continue
		case it.Status.Phase.Active():
			n++
			delete(mine, it.Name)
		case it.Status.Phase.Terminal():
			delete(mine, it.Name)
		}
	}
	n += len(mine)
	if mine[except] {
		n--
	}
	inFlight.WithLabelValues(policy).Set(float64(n))
	return n, nil
}

func (s *slotCounter) admitted(policy, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pending == nil {
		s.pending = map[string]map[string]bool{}
	}
	if s.pending[policy] == nil {
		s.pending[policy] = map[string]bool{}
	}
	s.pending[policy][name] = true
}

// release gives back a slot reserved for an incident that did not start.
func (s *slotCounter) release(policy, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.pending[policy], name)
}
