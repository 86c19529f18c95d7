//go:build integration

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/poll"
	"github.com/gpuheal/gpuheal/internal/testenv"
	"github.com/gpuheal/gpuheal/internal/testenv/testcluster"
)

// fleetClock records, from a watch on the fleet, when each node was first
// seen cordoned, and when each replacement node was first seen Ready.
type fleetClock struct {
	mu        sync.Mutex
	cordoned  map[string]time.Time
	replReady map[string]time.Time // old node → its replacement Ready
}

func (f *fleetClock) follow(ctx context.Context, b *testing.B, c client.WithWatch) {
	w, err := c.Watch(ctx, &corev1.NodeList{})
	if err != nil {
		b.Fatal(err)
	}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			n, ok := ev.Object.(*corev1.Node)
			if !ok || ev.Type == watch.Deleted {
				continue
			}
			now := time.Now()
			f.mu.Lock()
			if _, seen := f.cordoned[n.Name]; n.Spec.Unschedulable && !seen {
				f.cordoned[n.Name] = now
			}
			if old := n.Annotations[v1alpha1.AnnotationReplaces]; old != "" && testenv.NodeReady(n) {
				if _, seen := f.replReady[old]; !seen {
					f.replReady[old] = now
				}
			}
			f.mu.Unlock()
		}
	}()
}

func benchScheme(testing.TB) *runtime.Scheme {
	s := runtime.NewScheme()
	if err := errors.Join(clientgoscheme.AddToScheme(s), v1alpha1.AddToScheme(s)); err != nil {
		panic(err) // both are generated registrations; an error is a build problem
	}
	return s
}

// BenchmarkRemediationFleet runs the controller binary against the real API
// server with a kwok fleet (GPUHEAL_BENCH_NODES, default 5,000 GPU nodes)
// and the kwok provider with a 90 s boot delay. Phase 1 breaks 50 nodes at
// random moments over 5 s: it measures condition→cordon after the policy's
// minimum duration, detection→replacement Ready, the most incidents in
// flight, and the controller's peak RSS. Phase 2 breaks 30% of the fleet at
// once: the breaker must open and nothing start beyond the cap.
func BenchmarkRemediationFleet(b *testing.B) {
	nodes := 5000
	if v, err := strconv.Atoi(os.Getenv("GPUHEAL_BENCH_NODES")); err == nil && v > 0 {
		nodes = v
	}
	const failures, maxParallel, minDuration = 50, 50, 10 * time.Second
	if failures*5 > nodes { // the policy's default maxUnhealthy is 20 %
		b.Fatalf("GPUHEAL_BENCH_NODES=%d: phase 1's %d failures would open the breaker (maxUnhealthy 20%%); use at least %d nodes",
			nodes, failures, failures*5)
	}
	env := testcluster.Start(b, testenv.Options{Kwok: true, Scheme: benchScheme(b)})
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	start := time.Now()
	names, err := testenv.CreateGPUNodes(ctx, env.Client, "fleet", nodes)
	if err != nil {
		b.Fatal(err)
	}
	if err := testenv.WaitNodesReady(ctx, env.Client, names); err != nil {
		b.Fatal(err)
	}
	b.Logf("%d nodes Ready in %v", nodes, time.Since(start).Round(time.Second))
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: benchScheme(b)})
	if err != nil {
		b.Fatal(err)
	}
	clock := &fleetClock{cordoned: map[string]time.Time{}, replReady: map[string]time.Time{}}
	clock.follow(ctx, b, wc)

	mp := intstr.FromInt32(maxParallel)
	policy := &v1alpha1.RemediationPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "fleet"},
		Spec: v1alpha1.RemediationPolicySpec{
			UnhealthyConditions: []v1alpha1.UnhealthyCondition{{Type: v1alpha1.ConditionGPUHealAcceleratorHealthy, Status: metav1.ConditionFalse, For: metav1.Duration{Duration: minDuration}}},
			MaxParallel:         &mp,
			Provider:            "kwok",
			RecoveryHold:        &metav1.Duration{Duration: 5 * time.Second},
		},
	}
	if err := env.Client.Create(ctx, policy); err != nil {
		b.Fatal(err)
	}
	ctrlBin := buildBinary(b, "github.com/gpuheal/gpuheal/cmd/gpuheal-controller", "gpuheal-controller")
	metricsPort, healthPort := freePort(b), freePort(b)
	args := []string{"--kubeconfig=" + env.Kubeconfig, "--leader-elect=false", "--providers=kwok,none",
		"--kwok-boot-delay=90s", "--poll-interval=1s", "--log-level=warn", "--audit-sqlite-path=" + b.TempDir() + "/audit.db",
		fmt.Sprintf("--metrics-address=127.0.0.1:%d", metricsPort), fmt.Sprintf("--health-address=127.0.0.1:%d", healthPort),
		"--metrics-secure=false"}
	// GPUHEAL_BENCH_CONTROLLER_ARGS adds controller flags, to compare
	// settings (e.g. --workers) on the same fleet.
	args = append(args, strings.Fields(os.Getenv("GPUHEAL_BENCH_CONTROLLER_ARGS"))...)
	b.Logf("controller flags: %s", strings.Join(args[1:], " "))
	stop := startProcess(b, ctrlBin, args...)
	defer stop()
	waitHTTP(b, fmt.Sprintf("http://127.0.0.1:%d/readyz", healthPort), time.Minute)
	pid := controllerPID(b, ctrlBin)

	// Phase 1: 50 failures at random moments over 5 s.
	rng := rand.New(rand.NewPCG(7, 11))
	broken := make([]string, 0, failures)
	for _, i := range rng.Perm(nodes)[:failures] {
		broken = append(broken, names[i])
	}
	since := map[string]time.Time{}
	for _, n := range broken {
		time.Sleep(time.Duration(rng.IntN(100)) * time.Millisecond) // spread the failures, not a wait
		since[n] = breakNode(ctx, b, env.Client, n)
	}
	maxInFlight, peakRSS := 0, 0
	settle, cancelSettle := context.WithTimeout(ctx, 10*time.Minute)
	defer cancelSettle()
	// A 500 ms sampling interval: a faster poll would load the API server
	// the benchmark measures.
	err = poll.Until(settle, fmt.Sprintf("%d incidents to succeed", failures), 500*time.Millisecond, func(ctx context.Context) (bool, error) {
		items := listIncidents(ctx, b, env.Client)
		active, done := 0, 0
		for _, it := range items {
			if it.Status.Phase.Active() {
				active++
			}
			if it.Status.Phase == v1alpha1.PhaseSucceeded {
				done++
			}
		}
		maxInFlight = max(maxInFlight, active)
		peakRSS = max(peakRSS, rssKiB(pid))
		if done != failures {
			return false, fmt.Errorf("%d of %d succeeded", done, failures)
		}
		return true, nil
	})
	if err != nil {
		b.Fatal(err)
	}
	// The cordon is timed twice: when the controller recorded the Cordoned
	// phase (right after the API server accepted the cordon; microseconds,
	// same machine clock) and when this process's watch of all nodes saw
	// it, which lags when thousands of kwok heartbeats fill the watch.
	// The Pending phase's time is when the remediation reconciler first
	// took the incident up: it splits the cordon latency into opening
	// (opener, create, watch, queue) and admitting (breaker, slot, patch).
	cordonedAt, pendingAt := map[string]time.Time{}, map[string]time.Time{}
	for _, it := range listIncidents(ctx, b, env.Client) {
		for _, ph := range it.Status.Phases {
			switch ph.Phase {
			case v1alpha1.PhaseCordoned:
				cordonedAt[it.Spec.NodeName] = ph.Time.Time
			case v1alpha1.PhasePending:
				if _, ok := pendingAt[it.Spec.NodeName]; !ok {
					pendingAt[it.Spec.NodeName] = ph.Time.Time
				}
			}
		}
	}
	var cordon, opening, admitting, seen, recovered []time.Duration
	clock.mu.Lock()
	for _, n := range broken {
		decided := since[n].Add(minDuration)
		cordon = append(cordon, cordonedAt[n].Sub(decided))
		opening = append(opening, pendingAt[n].Sub(decided))
		admitting = append(admitting, cordonedAt[n].Sub(pendingAt[n]))
		seen = append(seen, clock.cordoned[n].Sub(decided))
		recovered = append(recovered, clock.replReady[n].Sub(decided))
	}
	clock.mu.Unlock()
	report(b, "cordon after min duration (recorded by the controller)", cordon)
	report(b, "  of which opening: min duration to the first reconcile", opening)
	report(b, "  of which admitting: first reconcile to cordoned", admitting)
	report(b, "cordon after min duration (seen through a watch of all nodes)", seen)
	report(b, "detection to replacement Ready", recovered)
	b.ReportMetric(float64(percentile(cordon, 99).Milliseconds()), "cordon-p99-ms")
	metricsText := scrape(b, fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort))
	// GPUHEAL_BENCH_METRICS_OUT keeps the controller's metrics after the
	// first phase (work queues, reconcile times, GC) for a closer look.
	if out := os.Getenv("GPUHEAL_BENCH_METRICS_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(metricsText), 0o644); err != nil {
			b.Log(err)
		}
	}
	b.Logf("cordon/uncordon patches that met a conflict so far: %.0f", seriesValue(metricsText, "gpuheal_node_patch_conflicts_total"))
	// A reconcile that waits in its queue for a free worker is time the
	// cordon loses; with 8 workers per controller it was most of the tail.
	for _, name := range []string{"node", "noderemediation"} {
		total := seriesValue(metricsText, `workqueue_queue_duration_seconds_count{controller="`+name+`",name="`+name+`"}`)
		quick := seriesValue(metricsText, `workqueue_queue_duration_seconds_bucket{controller="`+name+`",name="`+name+`",le="0.1"}`)
		b.Logf("%s queue: %.0f of %.0f reconciles waited over 100 ms for a worker", name, total-quick, total)
	}
	b.ReportMetric(percentile(recovered, 100).Seconds(), "recover-max-s")
	b.ReportMetric(float64(maxInFlight), "max-in-flight")

	// Phase 2: 30% of the fleet fails at once.
	var healthy []string
	for _, n := range names {
		if _, ok := since[n]; !ok {
			healthy = append(healthy, n)
		}
	}
	mass := healthy[:nodes*3/10]
	t2 := time.Now()
	breakMany(ctx, b, env.Client, mass)
	b.Logf("broke %d nodes in %v", len(mass), time.Since(t2).Round(time.Millisecond))
	var pol v1alpha1.RemediationPolicy
	breakerCtx, cancelBreaker := context.WithDeadline(ctx, t2.Add(3*time.Minute))
	defer cancelBreaker()
	what := fmt.Sprintf("the breaker to open after %d of %d nodes failed", len(mass), nodes)
	if err := poll.Until(breakerCtx, what, 500*time.Millisecond, func(ctx context.Context) (bool, error) {
		if err := env.Client.Get(ctx, types.NamespacedName{Name: "fleet"}, &pol); err != nil {
			return false, err
		}
		return pol.Status.BreakerOpen, fmt.Errorf("status %+v", pol.Status)
	}); err != nil {
		b.Fatal(err)
	}
	b.Logf("breaker open %v after the mass failure: %s", time.Since(t2).Round(time.Millisecond), breakerMessage(pol))
	// Let every incident open (minimum duration) and be held, then count.
	massSet := map[string]bool{}
	for _, n := range mass {
		massSet[n] = true
	}
	var opened, started int
	for end := time.Now().Add(minDuration + 30*time.Second); time.Now().Before(end); time.Sleep(time.Second) {
		opened, started = 0, 0
		for _, it := range listIncidents(ctx, b, env.Client) {
			if !massSet[it.Spec.NodeName] {
				continue
			}
			opened++
			if len(it.Status.Phases) > 1 && it.Status.Phase != v1alpha1.PhaseCancelled {
				started++
			}
		}
		peakRSS = max(peakRSS, rssKiB(pid))
	}
	b.Logf("mass failure: %d incidents opened, %d started beyond Pending (cap: maxParallel %d)", opened, started, maxParallel)
	if started > maxParallel {
		b.Errorf("%d incidents started while the breaker was open, more than maxParallel %d", started, maxParallel)
	}
	b.ReportMetric(float64(started), "started-with-breaker-open")
	b.ReportMetric(float64(peakRSS)/1024, "controller-peak-rss-MiB")
	b.Logf("controller peak RSS %.1f MiB over the run", float64(peakRSS)/1024)
}

func breakNode(ctx context.Context, b testing.TB, c client.Client, node string) time.Time {
	now := metav1.Now()
	patch, _ := json.Marshal(map[string]any{"status": map[string]any{"conditions": []corev1.NodeCondition{{
		Type: v1alpha1.ConditionGPUHealAcceleratorHealthy, Status: corev1.ConditionFalse, Reason: "NvidiaXID79Error",
		Message: "GPU 0 fell off the bus; recommended action: replace", LastTransitionTime: now, LastHeartbeatTime: now,
	}}}})
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}
	// The advice first, as the agent writes it: the controller reads it
	// from the annotation when the condition opens an incident.
	advice, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
		v1alpha1.AnnotationRecommendedActions: `{"GPUHealAcceleratorHealthy":"replace"}`}}})
	if err := c.Patch(ctx, n, client.RawPatch(types.MergePatchType, advice)); err != nil {
		b.Fatalf("advising replace on %s: %v", node, err)
	}
	if err := c.Status().Patch(ctx, n, client.RawPatch(types.StrategicMergePatchType, patch)); err != nil {
		b.Fatalf("breaking %s: %v", node, err)
	}
	// The API server keeps whole seconds; the controller counts from there.
	return now.Truncate(time.Second)
}

func breakMany(ctx context.Context, b *testing.B, c client.Client, nodes []string) {
	var wg sync.WaitGroup
	work := make(chan string)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range work {
				breakNode(ctx, b, c, n)
			}
		}()
	}
	for _, n := range nodes {
		work <- n
	}
	close(work)
	wg.Wait()
}

func listIncidents(ctx context.Context, b *testing.B, c client.Client) []v1alpha1.NodeRemediation {
	var list v1alpha1.NodeRemediationList
	if err := c.List(ctx, &list); err != nil {
		b.Fatal(err)
	}
	return list.Items
}

func breakerMessage(p v1alpha1.RemediationPolicy) string {
	for _, c := range p.Status.Conditions {
		if c.Type == "BreakerOpen" {
			return c.Message
		}
	}
	return ""
}

func percentile(d []time.Duration, p int) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	return s[max(0, min(len(s)-1, i-1))]
}

func report(b *testing.B, what string, d []time.Duration) {
	b.Logf("%s over %d incidents: min %v p50 %v p90 %v p99 %v max %v", what, len(d),
		percentile(d, 0).Round(time.Millisecond), percentile(d, 50).Round(time.Millisecond),
		percentile(d, 90).Round(time.Millisecond), percentile(d, 99).Round(time.Millisecond),
		percentile(d, 100).Round(time.Millisecond))
}

// controllerPID finds the controller started by this test among our children.
func controllerPID(b *testing.B, bin string) int {
	for _, pid := range testenv.ChildPIDs(os.Getpid()) {
		if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil && exe == bin {
			return pid
		}
	}
	b.Fatalf("controller process %s not found", bin)
	return 0
}

func rssKiB(pid int) int {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "VmRSS:"); ok {
			kib, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return kib
		}
	}
	return 0
}
