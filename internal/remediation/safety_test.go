//go:build integration

package remediation

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/provider/kwok"
)

// TestBreakerAndMaxParallel: with more nodes unhealthy than maxUnhealthy
// nothing starts and the policy says why; as the fleet recovers the breaker
// closes by itself and incidents start no more than maxParallel at a time.
func TestBreakerAndMaxParallel(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "brk", 10)
	p := fastPolicy("brk")
	twenty, two := intstr.FromString("20%"), intstr.FromInt32(2)
	p.Spec.MaxUnhealthy, p.Spec.MaxParallel = &twenty, &two
	h.create(p)
	h.startController(controllerConfig{kwok: kwokSlowBoot()})

	broken := h.nodes[:3] // 30% of 10 > 20%
	for _, n := range broken {
		h.breakGPU(n, "replace")
	}
	h.waitFor("breaker open on the policy", 30*time.Second, func() (bool, error) {
		var pol v1alpha1.RemediationPolicy
		err := h.c.Get(t.Context(), client.ObjectKey{Name: "brk"}, &pol)
		return err == nil && pol.Status.BreakerOpen && pol.Status.UnhealthyNodes == 3 && pol.Status.MatchedNodes == 10, err
	})
	h.waitFor("all three incidents held by the breaker", 30*time.Second, func() (bool, error) {
		for _, n := range broken {
			items := h.incidents(n)
			if len(items) != 1 {
				return false, nil
			}
			c := meta.FindStatusCondition(items[0].Status.Conditions, v1alpha1.ConditionAdmitted)
			if c == nil || c.Reason != "BreakerOpen" {
				return false, nil
			}
			if items[0].Status.Phase != v1alpha1.PhasePending {
				return false, fmt.Errorf("%s started (%s) while the breaker was open", items[0].Name, items[0].Status.Phase)
			}
		}
		return true, nil
	})
	for _, n := range broken {
		if node, _ := h.node(n); node.Spec.Unschedulable {
			t.Fatalf("node %s cordoned while the breaker was open", n)
		}
	}

	// Five more failures, then the first three recover: 5 of 10 unhealthy
	// would still trip 20%, so raise maxUnhealthy to let the rest run.
	var pol v1alpha1.RemediationPolicy
	if err := h.c.Get(t.Context(), client.ObjectKey{Name: "brk"}, &pol); err != nil {
		t.Fatal(err)
	}
	sixty := intstr.FromString("60%")
	pol.Spec.MaxUnhealthy = &sixty
	if err := h.c.Update(t.Context(), &pol); err != nil {
		t.Fatal(err)
	}
	more := h.nodes[3:6]
	for _, n := range more {
		h.breakGPU(n, "replace")
	}
	all := append(append([]string{}, broken...), more...)
	maxSeen := 0
	h.waitFor("all six incidents to succeed", 3*time.Minute, func() (bool, error) {
		// One list, so the count is of one moment: listing node by node
		// could see an incident finish and the next one start, and count both.
		var list v1alpha1.NodeRemediationList
		if err := h.c.List(t.Context(), &list); err != nil {
			return false, err
		}
		active, done := 0, 0
		for _, it := range list.Items {
			if !slices.Contains(all, it.Spec.NodeName) {
				continue
			}
			if it.Status.Phase.Active() {
				active++
			}
			if it.Status.Phase == v1alpha1.PhaseSucceeded {
				done++
			}
		}
		maxSeen = max(maxSeen, active)
		if active > 2 {
			return false, fmt.Errorf("%d incidents in flight, maxParallel is 2", active)
		}
		return done == len(all), nil
	})
	if maxSeen > 2 {
		t.Errorf("saw %d incidents in flight at once, maxParallel is 2", maxSeen)
	}
	h.waitFor("breaker closed", 30*time.Second, func() (bool, error) {
		err := h.c.Get(t.Context(), client.ObjectKey{Name: "brk"}, &pol)
		return err == nil && !pol.Status.BreakerOpen, err
	})
}

// kwokSlowBoot makes replacements take long enough for several incidents
// to overlap.
func kwokSlowBoot() kwok.Options {
	return kwok.Options{BootDelay: 3 * time.Second, RebootDelay: time.Second}
}

// TestCrashAfterEachPhase stops the controller as soon as an incident
// enters each phase and starts a new one: every incident still ends with
// exactly one replacement.
func TestCrashAfterEachPhase(t *testing.T) { //nolint:tparallel // each subtest crashes the one controller of the cluster
	t.Parallel()
	h := newHarness(t, "crash", 7)
	h.create(fastPolicy("crash"))
	phases := []v1alpha1.Phase{v1alpha1.PhasePending, v1alpha1.PhaseCordoned, v1alpha1.PhaseDraining,
		v1alpha1.PhaseDrained, v1alpha1.PhaseReplacing, v1alpha1.PhaseVerifying}
	for i, phase := range phases {
		node := h.nodes[i]
		t.Run(string(phase), func(t *testing.T) {
			h := h.sub(t)
			h.runPod("default", "job-"+node, node, nil)
			stop := h.startController(controllerConfig{})
			h.breakGPU(node, "replace")
			h.waitFor("incident reaching "+string(phase), 60*time.Second, func() (bool, error) {
				items := h.incidents(node)
				if len(items) != 1 {
					return false, nil
				}
				for _, p := range phasesOf(items[0]) {
					if p == phase {
						return true, nil
					}
				}
				return false, nil
			})
			stop() // the controller dies here; a new one takes over
			h.startController(controllerConfig{})
			nr := h.waitPhase(node, v1alpha1.PhaseSucceeded, 90*time.Second)
			ok := 0
			for _, r := range nr.Status.ProviderRequests {
				if r.Error == "" {
					ok++
				}
			}
			if ok != 1 {
				t.Errorf("%d successful provider requests, want exactly 1: %+v", ok, nr.Status.ProviderRequests)
			}
			if repl := h.replacementsOf(node); len(repl) != 1 {
				t.Errorf("replacements of %s: %v, want exactly one", node, repl)
			}
		})
	}
}

// TestLeaderHandoverMidIncident: two replicas; the leader is stopped while
// an incident is draining and the standby finishes it.
func TestLeaderHandoverMidIncident(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "ha", 2)
	h.create(fastPolicy("ha"))
	node := h.nodes[0]
	h.runPod("default", "critical-0", node, map[string]string{"app": "critical"}, readyByTest)
	h.markPodReady("default", "critical-0")
	h.blockingPDB("default", "critical", map[string]string{"app": "critical"})
	stopA := h.startController(controllerConfig{leaderElection: true})
	h.startController(controllerConfig{leaderElection: true})
	h.breakGPU(node, "replace")
	h.waitFor("drain held by the PDB", 60*time.Second, func() (bool, error) {
		items := h.incidents(node)
		return len(items) == 1 && items[0].Status.Phase == v1alpha1.PhaseDraining, nil
	})
	stopA()
	// The workload's owner moves it: the PDB no longer protects anything.
	if err := h.c.Delete(t.Context(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "critical-0"}}); err != nil {
		t.Fatal(err)
	}
	nr := h.waitPhase(node, v1alpha1.PhaseSucceeded, 90*time.Second)
	if len(nr.Status.ProviderRequests) != 1 || len(h.replacementsOf(node)) != 1 {
		t.Errorf("requests %+v replacements %v: want exactly one each", nr.Status.ProviderRequests, h.replacementsOf(node))
	}
}

// TestAPIErrorsNeverLoseOrDuplicate injects failures into a fifth of the
// controller's writes (controller-runtime's interceptor client): incidents
// still finish, each node has exactly one incident and one replacement.
func TestAPIErrorsNeverLoseOrDuplicate(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "flaky", 4)
	h.create(fastPolicy("flaky"))
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(1, 2))
	injected := 0
	fail := func() error {
		mu.Lock()
		defer mu.Unlock()
		if rng.IntN(5) == 0 {
			injected++
			return apierrors.NewServiceUnavailable("injected by the test")
		}
		return nil
	}
	wrap := func(c client.WithWatch) client.Client {
		return interceptor.NewClient(c, interceptor.Funcs{
			Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				if err := fail(); err != nil {
					return err
				}
				return c.Create(ctx, obj, opts...)
			},
			Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
				if err := fail(); err != nil {
					return err
				}
				return c.Patch(ctx, obj, p, opts...)
			},
			Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
				if err := fail(); err != nil {
					return err
				}
				return c.Delete(ctx, obj, opts...)
			},
			SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
				if err := fail(); err != nil {
					return err
				}
				return c.SubResource(sub).Update(ctx, obj, opts...)
			},
			SubResourceCreate: func(ctx context.Context, c client.Client, sub string, obj, subObj client.Object, opts ...client.SubResourceCreateOption) error {
				if err := fail(); err != nil {
					return err
				}
				return c.SubResource(sub).Create(ctx, obj, subObj, opts...)
			},
		})
	}
	h.startController(controllerConfig{wrap: wrap})
	for i, n := range h.nodes {
		h.runPod("default", fmt.Sprintf("job-%d", i), n, nil)
		h.breakGPU(n, "replace")
	}
	for _, n := range h.nodes {
		nr := h.waitPhase(n, v1alpha1.PhaseSucceeded, 2*time.Minute)
		ok := 0
		for _, r := range nr.Status.ProviderRequests {
			if r.Error == "" {
				ok++
			}
		}
		if ok != 1 || len(h.replacementsOf(n)) != 1 {
			t.Errorf("%s: %d successful requests, replacements %v; want one each", n, ok, h.replacementsOf(n))
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if injected == 0 {
		t.Fatal("no error was injected; the test proves nothing")
	}
	t.Logf("%d API errors injected", injected)
}
