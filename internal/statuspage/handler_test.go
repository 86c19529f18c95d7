package statuspage

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/fleetview"
)

var now = time.Date(2026, 11, 30, 13, 0, 0, 0, time.UTC)

// fleetFixture: three nodes (healthy, a GPU fault under remediation, a
// cordoned one), two policies (one with its breaker open) and three
// incidents (one open, one recovered, one failed).
func fleetFixture(t *testing.T) client.WithWatch {
	t.Helper()
	const T, F = corev1.ConditionTrue, corev1.ConditionFalse
	objs := []client.Object{
		nodeSpec{name: "gpu-b", gpus: 8, healthyGPUs: 7, gpuOK: F, kernelOK: T, ready: T, reason: "NvidiaXID79Error", tier: "bronze", score: "40", cordoned: true}.node(now),
		nodeSpec{name: "gpu-a", gpus: 8, healthyGPUs: 8, gpuOK: T, kernelOK: T, ready: T, tier: "gold", score: "100"}.node(now),
		nodeSpec{name: "gpu-c", gpus: 4, healthyGPUs: -1, ready: T, cordoned: true}.node(now),
		incident("gpu-b-2", "gpu-b", now.Add(-3*time.Minute), now.Add(-time.Minute), v1alpha1.ActionReboot,
			v1alpha1.PhasePending, time.Duration(0), v1alpha1.PhaseDraining, time.Second),
		incident("gpu-b-1", "gpu-b", now.Add(-2*time.Hour), now.Add(-118*time.Minute), v1alpha1.ActionReboot,
			v1alpha1.PhasePending, time.Duration(0), v1alpha1.PhaseRebooting, time.Minute, v1alpha1.PhaseSucceeded, 8*time.Minute),
		incident("gpu-a-1", "gpu-a", now.Add(-5*time.Hour), now.Add(-298*time.Minute), v1alpha1.ActionReplace,
			v1alpha1.PhasePending, time.Duration(0), v1alpha1.PhaseFailed, 30*time.Minute),
		&v1alpha1.RemediationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Status: v1alpha1.RemediationPolicyStatus{
			MatchedNodes: 3, UnhealthyNodes: 1, InFlight: 1,
		}},
		&v1alpha1.RemediationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "b200"}, Spec: v1alpha1.RemediationPolicySpec{DryRun: true}, Status: v1alpha1.RemediationPolicyStatus{
			MatchedNodes: 10, UnhealthyNodes: 4, BreakerOpen: true,
			Conditions: []metav1.Condition{{Type: v1alpha1.ConditionBreakerOpen, Status: metav1.ConditionTrue, Reason: "TooManyUnhealthy", Message: "4 of 10 unhealthy, more than maxUnhealthy (2)"}},
		}},
	}
	return fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(objs...).Build()
}

func serve(t *testing.T, r client.Reader, opts Options) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle(Prefix, New(r, opts))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func get(t *testing.T, url string) (*http.Response, string) {
	t.Helper()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

func TestFleetAPI(t *testing.T) {
	srv := serve(t, fleetFixture(t), Options{})
	resp, body := get(t, srv.URL+Prefix+FleetPath)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d, content type %q: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	var got fleetview.View
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	type tile struct {
		Name  string
		State fleetview.State
		Phase v1alpha1.Phase
		GPUs  string
	}
	var tiles []tile
	for _, n := range got.Nodes {
		healthy := "?"
		if n.HealthyGPUs != nil {
			healthy = strconv.Itoa(*n.HealthyGPUs)
		}
		tiles = append(tiles, tile{n.Name, n.State, n.Phase, healthy + "/" + strconv.Itoa(n.GPUs)})
	}
	wantTiles := []tile{
		{"gpu-a", fleetview.StateHealthy, "", "8/8"},
		{"gpu-b", fleetview.StateUnhealthy, v1alpha1.PhaseDraining, "7/8"},
		{"gpu-c", fleetview.StateCordoned, "", "?/4"},
	}
	if diff := cmp.Diff(wantTiles, tiles); diff != "" {
		t.Errorf("tiles, sorted by name (-want +got):\n%s", diff)
	}
	wantSummary := fleetview.Summary{Nodes: 3, Healthy: 1, Unhealthy: 1, Cordoned: 1, GPUs: 20, HealthyGPUs: 15}
	if diff := cmp.Diff(wantSummary, got.Summary); diff != "" {
		t.Errorf("summary (-want +got):\n%s", diff)
	}
	wantPolicies := []fleetview.Policy{
		{Name: "b200", MatchedNodes: 10, UnhealthyNodes: 4, BreakerOpen: true, DryRun: true, Message: "4 of 10 unhealthy, more than maxUnhealthy (2)"},
		{Name: "default", MatchedNodes: 3, UnhealthyNodes: 1, InFlight: 1},
	}
	if diff := cmp.Diff(wantPolicies, got.Policies); diff != "" {
		t.Errorf("policies (-want +got):\n%s", diff)
	}
}

func TestIncidentsAPI(t *testing.T) {
	srv := serve(t, fleetFixture(t), Options{MaxIncidents: 2})
	_, body := get(t, srv.URL+Prefix+IncidentsPath)
	var got Incidents
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	finished := now.Add(-110 * time.Minute)
	ttr := (10 * time.Minute).Seconds() // detected 2h ago, succeeded 110m ago
	want := Incidents{Total: 3, Items: []Incident{
		{Name: "gpu-b-2", Node: "gpu-b", Policy: "default", Condition: v1alpha1.ConditionGPUHealAcceleratorHealthy, Reason: "NvidiaXID79Error",
			Action: v1alpha1.ActionReboot, Phase: v1alpha1.PhaseDraining, Detected: now.Add(-3 * time.Minute), Opened: now.Add(-time.Minute)},
		{Name: "gpu-b-1", Node: "gpu-b", Policy: "default", Condition: v1alpha1.ConditionGPUHealAcceleratorHealthy, Reason: "NvidiaXID79Error",
			Action: v1alpha1.ActionReboot, Phase: v1alpha1.PhaseSucceeded, Detected: now.Add(-2 * time.Hour), Opened: now.Add(-118 * time.Minute),
			Finished: &finished, TimeToRecoverSeconds: &ttr},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("incidents, newest first, at most 2 (-want +got):\n%s", diff)
	}
}

func TestFailedIncidentHasNoTimeToRecover(t *testing.T) {
	nr := incident("x", "gpu-a", now, now, v1alpha1.ActionReplace, v1alpha1.PhaseFailed, time.Hour)
	got := incidentOf(nr)
	if got.Finished == nil || !got.Finished.Equal(now.Add(time.Hour)) || got.TimeToRecoverSeconds != nil {
		t.Errorf("finished %v, time to recover %v: want %v and none", got.Finished, got.TimeToRecoverSeconds, now.Add(time.Hour))
	}
}

func TestPageAndErrors(t *testing.T) {
	srv := serve(t, fleetFixture(t), Options{})
	tests := []struct {
		path, wantType, wantBody string
		wantCode                 int
	}{
		{Prefix, "text/html; charset=utf-8", `src="app.js"`, http.StatusOK},
		{Prefix + "app.js", "text/javascript; charset=utf-8", "EventSource('api/events')", http.StatusOK},
		{Prefix + "style.css", "text/css; charset=utf-8", ".tile", http.StatusOK},
		{Prefix + "nope.js", "application/json", "no such status page path", http.StatusNotFound},
		{Prefix + "static/app.js", "application/json", "no such status page path", http.StatusNotFound},
		{Prefix + "api/nope", "application/json", "no such status page path", http.StatusNotFound},
	}
	for _, tt := range tests {
		resp, body := get(t, srv.URL+tt.path)
		if resp.StatusCode != tt.wantCode || resp.Header.Get("Content-Type") != tt.wantType || !strings.Contains(body, tt.wantBody) {
			t.Errorf("GET %s: %d %q, want %d %q with %q; body:\n%.300s", tt.path, resp.StatusCode, resp.Header.Get("Content-Type"),
				tt.wantCode, tt.wantType, tt.wantBody, body)
		}
	}
	resp, _ := get(t, srv.URL+Prefix)
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
		t.Errorf("page Content-Security-Policy %q: want scripts from the page's own origin only", csp)
	}
	post, err := http.Post(srv.URL+Prefix+FleetPath, "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = post.Body.Close()
	if post.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d, want 405", post.StatusCode)
	}
}

// Behind the API server's service proxy the page lives at
// .../proxy/status/: the redirect that adds the slash must stay there.
func TestRedirectIsRelative(t *testing.T) {
	h := New(fleetFixture(t), Options{})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/status", nil))
	if rec.Code != http.StatusMovedPermanently || rec.Header().Get("Location") != "status/" {
		t.Errorf("GET /status: %d Location %q, want 301 to the relative status/", rec.Code, rec.Header().Get("Location"))
	}
}

func TestReadErrorIsReported(t *testing.T) {
	failing := interceptor.NewClient(fleetFixture(t), interceptor.Funcs{
		List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
			return errors.New("cache not synced")
		},
	})
	srv := serve(t, failing, Options{})
	resp, body := get(t, srv.URL+Prefix+FleetPath)
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "listing nodes: cache not synced") {
		t.Errorf("fleet with a failing reader: %d %s, want 503 saying what failed", resp.StatusCode, body)
	}
	if e := next(t, stream(t, srv.URL+Prefix+EventsPath)); e.name != EventUnavailable || !strings.Contains(e.data, "cache not synced") {
		t.Errorf("stream with a failing reader: event %q %s, want %q saying what failed", e.name, e.data, EventUnavailable)
	}
}

// The cached snapshot is shared for half an interval, then rebuilt.
func TestSnapshotsAreSharedBriefly(t *testing.T) {
	c := fleetFixture(t)
	clock := clocktesting.NewFakeClock(now)
	srv := serve(t, c, Options{Interval: 2 * time.Second, Clock: clock})
	_, before := get(t, srv.URL+Prefix+FleetPath)
	breakNode(t, c, "gpu-a")
	if _, body := get(t, srv.URL+Prefix+FleetPath); body != before {
		t.Errorf("fleet changed within half an interval: the snapshot should be shared")
	}
	clock.Step(time.Second)
	if _, body := get(t, srv.URL+Prefix+FleetPath); !strings.Contains(body, `"name":"gpu-a","state":"unhealthy"`) {
		t.Errorf("after half an interval the fleet still shows gpu-a healthy:\n%s", body)
	}
}

// breakNode sets the node's GPUHealAcceleratorHealthy to False.
func breakNode(t *testing.T, c client.Client, name string) {
	t.Helper()
	ctx := context.Background()
	var n corev1.Node
	if err := c.Get(ctx, client.ObjectKey{Name: name}, &n); err != nil {
		t.Fatal(err)
	}
	orig := n.DeepCopy()
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == v1alpha1.ConditionGPUHealAcceleratorHealthy {
			n.Status.Conditions[i].Status, n.Status.Conditions[i].Reason = corev1.ConditionFalse, "NvidiaXID79Error"
			n.Status.Conditions[i].LastTransitionTime = metav1.Now()
		}
	}
	if err := c.Status().Patch(ctx, &n, client.MergeFrom(orig)); err != nil {
		t.Fatalf("patching status of node %s: %v", name, err)
	}
}
