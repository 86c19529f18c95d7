package agent

import (
	"context"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuheal/gpuheal/internal/gpu/sim"
	"github.com/gpuheal/gpuheal/internal/testenv"
)

// The sim fleet against the real API server: an agent per GPU node, a
// fault turns its node's GPU condition False, a reboot (the kwok
// provider's booting label) stops the agent and the next one starts on
// healthy hardware, and a deleted node loses its agent.
func TestSimFleetFollowsNodes(t *testing.T) {
	env := testenv.ForTest(t, testenv.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	names, err := testenv.CreateGPUNodes(ctx, env.Client, "fleet", 3)
	if err != nil {
		t.Fatal(err)
	}
	kube, err := clientFor(env.Kubeconfig, 50)
	if err != nil {
		t.Fatal(err)
	}
	o := simFleetTestOptions(env.Kubeconfig)
	f := newSimFleet(o, kube, t.TempDir(), slog.New(slog.DiscardHandler))
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); f.run(runCtx) }()
	defer func() { stop(); <-done }()

	for _, n := range names {
		waitGPUCondition(ctx, t, env.Client, n, corev1.ConditionTrue)
	}
	srv := httptest.NewServer(http.HandlerFunc(f.serveNodeMetrics))
	defer srv.Close()
	body := get(t, srv.URL+"/nodes/"+names[0]+"/metrics", http.StatusOK)
	if !strings.Contains(body, "gpuheal_gpu_temperature_celsius") {
		t.Fatalf("node metrics lack GPU series:\n%.500s", body)
	}
	get(t, srv.URL+"/nodes/no-such-node/metrics", http.StatusNotFound)

	sick := names[1]
	if err := f.agentOf(sick).node.Inject(sim.Fault{Kind: sim.KindDBE, GPU: 3}); err != nil {
		t.Fatal(err)
	}
	waitGPUCondition(ctx, t, env.Client, sick, corev1.ConditionFalse)

	// The simulated reboot: the agent goes down with the machine...
	setLabel(ctx, t, env.Client, sick, bootingLabel, "true")
	first := f.agentOf(sick)
	waitFor(ctx, t, "agent of the rebooting node stopped", func() bool { return f.agentOf(sick) == nil })
	// ...and the machine comes back healed, with a new agent.
	setLabel(ctx, t, env.Client, sick, bootingLabel, "")
	waitFor(ctx, t, "agent of the booted node started", func() bool { a := f.agentOf(sick); return a != nil && a != first })
	waitGPUCondition(ctx, t, env.Client, sick, corev1.ConditionTrue)

	gone := &corev1.Node{}
	gone.Name = names[2]
	if err := env.Client.Delete(ctx, gone); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "agent of the deleted node stopped", func() bool { return f.agentOf(names[2]) == nil })
	if got := testutilGauge(f); got != 2 {
		t.Fatalf("gpuheal_simfleet_agents = %v, want 2", got)
	}
}

// Faults land on distinct nodes: a node with a fatal fault gets no second
// one until its repair, and the draws repeat for a seed.
func TestSimFleetInjectsOneFatalFaultPerNode(t *testing.T) {
	draw := func(seed int64) []string {
		rng := rand.New(rand.NewPCG(uint64(seed), 1)) //nolint:gosec // test
		var got []string
		for range 50 {
			got = append(got, drawFault(rng).name)
		}
		return got
	}
	a, b := draw(7), draw(7)
	if strings.Join(a, ",") != strings.Join(b, ",") {
		t.Fatal("the same seed drew different faults")
	}
	seen := map[string]bool{}
	for _, name := range a {
		seen[name] = true
	}
	if !seen["faulty-gpu"] || len(seen) < 4 {
		t.Fatalf("50 draws from the mix gave only %v", seen)
	}

	o := simFleetTestOptions("")
	f := newSimFleet(o, nil, t.TempDir(), slog.New(slog.DiscardHandler))
	for _, name := range []string{"a", "b", "c"} {
		n, err := sim.New(sim.Options{NodeName: name, GPUs: 8})
		if err != nil {
			t.Fatal(err)
		}
		f.agents[name] = &simAgent{node: n}
	}
	for range 200 {
		f.injectOne()
	}
	for name, a := range f.agents {
		if !a.faulted {
			t.Errorf("node %s never got a fatal fault in 200 draws", name)
		}
	}
}

func simFleetTestOptions(kubeconfig string) *Options {
	return &Options{
		Kubeconfig: kubeconfig, Backend: BackendSim, Interval: time.Second, CallTimeout: 500 * time.Millisecond,
		KmsgPoll: 50 * time.Millisecond, Output: "text", GCPercent: 100,
		Sim:      SimOptions{GPUs: 8, Model: "H100-80GB-HBM3"},
		SimFleet: SimFleetOptions{Enabled: true, NodeSelector: "nvidia.com/gpu.present=true", Resync: 100 * time.Millisecond, Seed: 1},
	}
}

func (f *simFleet) agentOf(node string) *simAgent {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.agents[node]
}

func testutilGauge(f *simFleet) float64 {
	mfs, err := f.registry.Gather()
	if err != nil {
		return -1
	}
	for _, mf := range mfs {
		if mf.GetName() == "gpuheal_simfleet_agents" {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return -1
}

func waitGPUCondition(ctx context.Context, t *testing.T, c client.Client, node string, want corev1.ConditionStatus) {
	t.Helper()
	waitFor(ctx, t, "node "+node+" AcceleratedHardwareReady="+string(want), func() bool {
		var n corev1.Node
		if err := c.Get(ctx, client.ObjectKey{Name: node}, &n); err != nil {
			return false
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == "AcceleratedHardwareReady" {
				return cond.Status == want
			}
		}
		return false
	})
}

func setLabel(ctx context.Context, t *testing.T, c client.Client, node, key, value string) {
	t.Helper()
	var n corev1.Node
	if err := c.Get(ctx, client.ObjectKey{Name: node}, &n); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(n.DeepCopy())
	if value == "" {
		delete(n.Labels, key)
	} else {
		n.Labels[key] = value
	}
	if err := c.Patch(ctx, &n, patch); err != nil {
		t.Fatal(err)
	}
}

func waitFor(ctx context.Context, t *testing.T, what string, ok func() bool) {
	t.Helper()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !ok() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-tick.C:
		}
	}
}

func get(t *testing.T, url string, want int) string {
	t.Helper()
	resp, err := http.Get(url) //nolint:gosec,noctx // a test server's URL
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != want {
		t.Fatalf("GET %s: %d, want %d: %s", url, resp.StatusCode, want, b)
	}
	return string(b)
}
