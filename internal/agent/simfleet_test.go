package agent

import (
	"context"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
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
	runFleet := func(f *simFleet) (stop func()) {
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); f.run(runCtx) }()
		return func() { cancel(); <-done }
	}
	stopFleet := runFleet(f)
	defer func() { stopFleet() }()

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
	dbe, _ := faultClassNamed("hbm3-dbe")
	f.mu.Lock()
	f.injectLocked(f.agents[sick], dbe, 3, Injection{Index: -1, Slot: sick, Class: dbe.name})
	f.mu.Unlock()
	waitGPUCondition(ctx, t, env.Client, sick, corev1.ConditionFalse)

	// The fleet process restarts (the agents with it): the machine is in
	// the same boot, so its GPU is still broken.
	stopFleet()
	f = newSimFleet(o, kube, f.dir, slog.New(slog.DiscardHandler))
	stopFleet = runFleet(f)
	waitFor(ctx, t, "agent of the sick node back", func() bool { return f.agentOf(sick) != nil })
	restored := f.agentOf(sick)
	snap, err := restored.node.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ecc := snap.GPUs[3].ECC.VolatileUncorrected; !restored.faulted() || ecc == nil || *ecc == 0 {
		t.Fatalf("after a fleet restart GPU 3 of %s lost its double-bit error (faulted %v, uncorrected %v)", sick, restored.faulted(), ecc)
	}
	journal, err := ReadInjections(f.dir)
	if err != nil || len(journal) != 1 || journal[0].Node != sick || !journal[0].Fatal {
		t.Fatalf("journal = %+v, %v; want the one DBE on %s", journal, err, sick)
	}

	// The simulated reboot: the agent goes down with the machine...
	setLabel(ctx, t, env.Client, sick, v1alpha1.LabelKwokBooting, "true")
	first := f.agentOf(sick)
	waitFor(ctx, t, "agent of the rebooting node stopped", func() bool { return f.agentOf(sick) == nil })
	// ...and the machine comes back healed, with a new agent: a new boot,
	// which the kwok provider marks with the reboot's token.
	var n corev1.Node
	if err := env.Client.Get(ctx, client.ObjectKey{Name: sick}, &n); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(n.DeepCopy())
	n.Annotations[v1alpha1.AnnotationKwokRebootToken] = "incident-1"
	delete(n.Labels, v1alpha1.LabelKwokBooting)
	if err := env.Client.Patch(ctx, &n, patch); err != nil {
		t.Fatal(err)
	}
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
		f.agents[name] = &simAgent{name: name, node: n}
	}
	for range 200 {
		f.injectOne()
	}
	for name, a := range f.agents {
		if !a.faulted() {
			t.Errorf("node %s never got a fatal fault in 200 draws", name)
		}
	}
}

func simFleetTestOptions(kubeconfig string) *Options {
	return &Options{
		Kubeconfig: kubeconfig, Backend: BackendSim, Interval: time.Second, CallTimeout: 500 * time.Millisecond,
		KmsgPoll: 50 * time.Millisecond, Output: "text", GCPercent: 100,
		Sim:      SimOptions{GPUs: 8, Model: "H100-80GB-HBM3"},
		SimFleet: SimFleetOptions{Enabled: true, NodeSelector: v1alpha1.LabelNvidiaGPUPresent + "=true", Resync: 100 * time.Millisecond, Seed: 1},
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
	waitFor(ctx, t, "node "+node+" "+v1alpha1.ConditionAcceleratedHardwareReady+"="+string(want), func() bool {
		var n corev1.Node
		if err := c.Get(ctx, client.ObjectKey{Name: node}, &n); err != nil {
			return false
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == v1alpha1.ConditionAcceleratedHardwareReady {
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

// A schedule is drawn the same for a seed, stored and read back, and run
// against slots: a replaced node's successor takes the fault, a slot with
// no machine up is journaled as skipped, and a restarted fleet goes on
// after the last journaled entry.
func TestSimFleetSchedule(t *testing.T) {
	slots := []string{"n-0", "n-1"}
	a := DrawSchedule(5, slots, 8, 6, 10*time.Minute)
	b := DrawSchedule(5, slots, 8, 6, 10*time.Minute)
	if len(a) < 30 || len(a) != len(b) || a[7] != b[7] {
		t.Fatalf("draws differ or are too few: %d vs %d", len(a), len(b))
	}
	if SlotOf("gpu-node-0007-r1a2b3c") != "gpu-node-0007" || SlotOf("gpu-node-0007") != "gpu-node-0007" {
		t.Fatal("SlotOf does not strip the replacement suffix")
	}
	dir := t.TempDir()
	path := dir + "/schedule.jsonl"
	sched := []ScheduledFault{
		{At: 0, Slot: "n-0", Class: "hbm3-dbe", GPU: 1},
		{At: 0, Slot: "n-9", Class: "faulty-gpu", GPU: 2},
		{At: time.Hour, Slot: "n-0", Class: "gsp-timeout", GPU: 0},
	}
	if err := WriteSchedule(path, sched); err != nil {
		t.Fatal(err)
	}
	o := simFleetTestOptions("")
	o.SimFleet.ScheduleFile = path
	f := newSimFleet(o, nil, dir, slog.New(slog.DiscardHandler))
	if err := f.loadSchedule(); err != nil {
		t.Fatal(err)
	}
	n, err := sim.New(sim.Options{NodeName: "n-0-r00beef", GPUs: 8})
	if err != nil {
		t.Fatal(err)
	}
	f.agents["n-0-r00beef"] = &simAgent{name: "n-0-r00beef", node: n}
	f.injectDue(f.epoch)
	got, err := ReadInjections(dir)
	if err != nil || len(got) != 2 {
		t.Fatalf("journal = %+v, %v", got, err)
	}
	if got[0].Node != "n-0-r00beef" || got[0].Skipped != "" || !got[0].Fatal || got[1].Skipped == "" {
		t.Errorf("journal = %+v; want the DBE on the replacement and n-9 skipped", got)
	}
	again := newSimFleet(o, nil, dir, slog.New(slog.DiscardHandler))
	if err := again.loadSchedule(); err != nil || again.next != 2 {
		t.Fatalf("restarted fleet resumes at %d (%v); want 2", again.next, err)
	}

	if err := os.WriteFile(path, []byte(`{"at":0,"slot":"n-0","class":"hbm3-dbe"}`+"\n"+`{"at":1,"slot":"n-0","class":"meteor"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadSchedule(path); err == nil || !strings.Contains(err.Error(), "schedule.jsonl:2") {
		t.Errorf("a bad class on line 2 gave %v", err)
	}
}
