//go:build integration

package simfleet

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/agent/kubecore"
	"github.com/gpuheal/gpuheal/internal/simfleet/schedule"
	"github.com/gpuheal/gpuheal/internal/testenv"
	"github.com/gpuheal/gpuheal/internal/testenv/testcluster"
	"github.com/gpuheal/gpuheal/internal/testproc"
)

// The sim fleet against the real API server: an agent per GPU node, a
// fault turns its node's GPU condition False and its gpu-faults names the
// one pod on that GPU, a reboot (the kwok
// provider's booting label) stops the agent and the next one starts on
// healthy hardware, and a deleted node loses its agent.
func TestSimFleetFollowsNodes(t *testing.T) {
	env := testcluster.Start(t, testenv.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	names, err := testenv.CreateGPUNodes(ctx, env.Client, "fleet", 3)
	if err != nil {
		t.Fatal(err)
	}
	kube, err := kubecore.NewClient(env.Kubeconfig, 50)
	if err != nil {
		t.Fatal(err)
	}
	o, tmpl := simFleetTestOptions(env.Kubeconfig)
	f := newSimFleet(o, tmpl, kube, t.TempDir(), slog.New(slog.DiscardHandler))
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
	bindGPUPods(ctx, t, env.Client, sick, 5) // pod w3 holds GPU 3 (the sim device manager)
	dbe, _ := schedule.ClassNamed("hbm3-dbe")
	f.mu.Lock()
	f.injectLocked(f.agents[sick], dbe, 3, schedule.Injection{Index: -1, Slot: sick, Class: dbe.Name})
	f.mu.Unlock()
	waitGPUCondition(ctx, t, env.Client, sick, corev1.ConditionFalse)
	waitGPUFaults(ctx, t, env.Client, sick, 3, "default/"+sick+"-w3")

	// The fleet process restarts (the agents with it): the machine is in
	// the same boot, so its GPU is still broken.
	stopFleet()
	f = newSimFleet(o, tmpl, kube, f.dir, slog.New(slog.DiscardHandler))
	stopFleet = runFleet(f)
	testproc.EventuallyTrue(t, time.Minute, "agent of the sick node back", func() bool { return f.agentOf(sick) != nil })
	restored := f.agentOf(sick)
	snap, err := restored.node.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ecc := snap.GPUs[3].ECC.VolatileUncorrected; !restored.faulted() || ecc == nil || *ecc == 0 {
		t.Fatalf("after a fleet restart GPU 3 of %s lost its double-bit error (faulted %v, uncorrected %v)", sick, restored.faulted(), ecc)
	}
	journal, err := schedule.ReadInjections(f.dir)
	if err != nil || len(journal) != 1 || journal[0].Node != sick || !journal[0].Fatal {
		t.Fatalf("journal = %+v, %v; want the one DBE on %s", journal, err, sick)
	}

	// The simulated reboot: the agent goes down with the machine...
	setLabel(ctx, t, env.Client, sick, v1alpha1.LabelKwokBooting, "true")
	first := f.agentOf(sick)
	testproc.EventuallyTrue(t, time.Minute, "agent of the rebooting node stopped", func() bool { return f.agentOf(sick) == nil })
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
	testproc.EventuallyTrue(t, time.Minute, "agent of the booted node started", func() bool { a := f.agentOf(sick); return a != nil && a != first })
	waitGPUCondition(ctx, t, env.Client, sick, corev1.ConditionTrue)

	gone := &corev1.Node{}
	gone.Name = names[2]
	if err := env.Client.Delete(ctx, gone); err != nil {
		t.Fatal(err)
	}
	testproc.EventuallyTrue(t, time.Minute, "agent of the deleted node stopped", func() bool { return f.agentOf(names[2]) == nil })
	if got := testutilGauge(f); got != 2 {
		t.Fatalf("gpuheal_simfleet_agents = %v, want 2", got)
	}
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
	testproc.EventuallyTrue(t, time.Minute, "node "+node+" "+v1alpha1.ConditionGPUHealAcceleratorHealthy+"="+string(want), func() bool {
		var n corev1.Node
		if err := c.Get(ctx, client.ObjectKey{Name: node}, &n); err != nil {
			return false
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == v1alpha1.ConditionGPUHealAcceleratorHealthy {
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
