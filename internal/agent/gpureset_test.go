package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/agent/kubecore"
	"github.com/gpuheal/gpuheal/internal/gpu"
	"github.com/gpuheal/gpuheal/internal/gpu/sim"
	"github.com/gpuheal/gpuheal/internal/gpureset"
	"github.com/gpuheal/gpuheal/internal/testproc"
)

// fakeNRServer serves the node's NodeRemediations: the first watch fails,
// later ones deliver one request; Node patches are recorded.
type fakeNRServer struct {
	mu       sync.Mutex
	lists    int
	watches  int
	selector string
	request  v1alpha1.NodeRemediation
	answers  []v1alpha1.GPUResetReport
}

func (s *fakeNRServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case r.Method == http.MethodPatch && r.URL.Path == "/api/v1/nodes/n":
		var body struct {
			Metadata struct {
				Annotations map[string]string `json:"annotations"`
			} `json:"metadata"`
		}
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &body)
		var rep v1alpha1.GPUResetReport
		_ = json.Unmarshal([]byte(body.Metadata.Annotations[v1alpha1.AnnotationGPUReset]), &rep)
		s.answers = append(s.answers, rep)
		_, _ = w.Write([]byte(`{}`))
	case r.URL.Path == noderemediationsPath && r.URL.Query().Get("watch") == "true":
		s.watches++
		if s.watches == 1 {
			http.Error(w, `{"kind":"Status","status":"Failure","code":500}`, http.StatusInternalServerError)
			return
		}
		obj, _ := json.Marshal(s.request)
		_, _ = fmt.Fprintf(w, `{"type":"ADDED","object":%s}`+"\n", obj)
	case r.URL.Path == noderemediationsPath:
		s.lists++
		s.selector = r.URL.Query().Get("labelSelector")
		_, _ = w.Write([]byte(`{"metadata":{"resourceVersion":"5"},"items":[]}`))
	default:
		http.NotFound(w, r)
	}
}

func (s *fakeNRServer) counts() (lists, watches int, answers []v1alpha1.GPUResetReport) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lists, s.watches, append([]v1alpha1.GPUResetReport(nil), s.answers...)
}

// A failed watch is followed by a new list after a backoff (not a tight
// loop); a request that arrives through the watch is run and answered
// Running, then Succeeded.
func TestGPUResetsListAgainAfterAFailedWatch(t *testing.T) {
	node, err := sim.New(sim.Options{NodeName: "n", GPUs: 4})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := node.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	g := snap.GPUs[2]
	now := metav1.Now()
	srv := &fakeNRServer{request: v1alpha1.NodeRemediation{
		ObjectMeta: metav1.ObjectMeta{Name: "inc", ResourceVersion: "6"},
		Spec:       v1alpha1.NodeRemediationSpec{NodeName: "n"},
		Status: v1alpha1.NodeRemediationStatus{Phase: v1alpha1.PhaseResetting, GPUReset: &v1alpha1.GPUResetStatus{
			RequestID: "inc-reset-1", GPUs: []v1alpha1.GPURef{{Index: 2, UUID: g.UUID}}, RequestedAt: &now}},
	}}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	kube, err := kubecore.ClientFor(&rest.Config{Host: hs.URL})
	if err != nil {
		t.Fatal(err)
	}
	journal, _ := openResetJournal("")
	r := &gpuResets{
		kube: kube, node: "n", log: slog.New(slog.DiscardHandler), clk: clock.RealClock{},
		before: func() *gpu.NodeSnapshot { return snap }, forget: func(string) {},
		journal: journal, metrics: newResetMetrics(), published: map[string]bool{},
		proc: &gpureset.Procedure{Device: node, Snapshot: node.Snapshot},
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	testproc.Eventually(t, 20*time.Second, "the request answered after the watch failed once", func(context.Context) (bool, error) {
		_, _, answers := srv.counts()
		return len(answers) == 2, nil
	})
	lists, watches, answers := srv.counts()
	if lists < 2 || watches < 2 {
		t.Errorf("%d lists, %d watches; want a new list after the failed watch", lists, watches)
	}
	if srv.selector != v1alpha1.LabelNode+"=n" {
		t.Errorf("label selector %q", srv.selector)
	}
	if answers[0].Outcome != v1alpha1.GPUResetRunning || answers[1].Outcome != v1alpha1.GPUResetSucceeded || answers[1].RequestID != "inc-reset-1" {
		t.Errorf("answers %+v, want Running then Succeeded", answers)
	}
	if node.GPUResets(2) != 1 {
		t.Errorf("GPU 2 reset %d times, want once", node.GPUResets(2))
	}
}

// Watches run on a copy of the agent's client without its 10s request
// timeout (which would cut each one with an error); the client itself
// keeps it.
func TestWatchClientLiftsTheRequestTimeout(t *testing.T) {
	kube, err := kubecore.ClientFor(&rest.Config{Host: "https://127.0.0.1:1", Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	w, length := watchClient(kube)
	if length != longWatch {
		t.Errorf("watch length %v, want %v", length, longWatch)
	}
	if got := w.(*rest.RESTClient).Client.Timeout; got != 0 {
		t.Errorf("watch client timeout %v, want none", got)
	}
	if got := kube.(*rest.RESTClient).Client.Timeout; got != 10*time.Second {
		t.Errorf("the agent's client timeout became %v", got)
	}
}

// A node name longer than a label value may be is cut and hashed in the
// controller's label; the agent's selector must use that value, or it
// never sees its own incidents.
func TestGPUResetsSelectorUsesTheLabelValue(t *testing.T) {
	long := "gpu-node-" + strings.Repeat("a", 70) + ".example.internal"
	r := &gpuResets{node: long}
	want := v1alpha1.LabelNode + "=" + v1alpha1.NodeLabelValue(long)
	if got := r.selector(); got != want {
		t.Errorf("selector %q, want %q", got, want)
	}
	if v := strings.TrimPrefix(r.selector(), v1alpha1.LabelNode+"="); len(v) > 63 {
		t.Errorf("selector value of %d characters, more than a label value allows", len(v))
	}
}

// A successful reset forgets the GPU's old findings even when the health
// loop's snapshot is gone by the time the reset ends (a collection
// failed meanwhile): the buses come from before the reset.
func TestGPUResetForgetsTheResetGPUWithoutALaterSnapshot(t *testing.T) {
	node, err := sim.New(sim.Options{NodeName: "n", GPUs: 4})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := node.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(&fakeNRServer{})
	defer hs.Close()
	kube, err := kubecore.ClientFor(&rest.Config{Host: hs.URL})
	if err != nil {
		t.Fatal(err)
	}
	journal, _ := openResetJournal("")
	last := snap
	var forgotten []string
	r := &gpuResets{
		kube: kube, node: "n", log: slog.New(slog.DiscardHandler), clk: clock.RealClock{},
		before: func() *gpu.NodeSnapshot { return last }, forget: func(bus string) { forgotten = append(forgotten, bus) },
		journal: journal, metrics: newResetMetrics(), published: map[string]bool{},
		proc: &gpureset.Procedure{Device: node, Snapshot: func(ctx context.Context) (*gpu.NodeSnapshot, error) {
			last = nil // the health loop's collection failed during the reset
			return node.Snapshot(ctx)
		}},
	}
	now := metav1.Now()
	r.offer(context.Background(), &v1alpha1.NodeRemediation{
		ObjectMeta: metav1.ObjectMeta{Name: "inc"},
		Spec:       v1alpha1.NodeRemediationSpec{NodeName: "n"},
		Status: v1alpha1.NodeRemediationStatus{Phase: v1alpha1.PhaseResetting, GPUReset: &v1alpha1.GPUResetStatus{
			RequestID: "inc-reset-1", GPUs: []v1alpha1.GPURef{{Index: 1, UUID: snap.GPUs[1].UUID}}, RequestedAt: &now}},
	})
	e, _ := journal.lookup("inc-reset-1")
	if e.Report == nil || e.Report.Outcome != v1alpha1.GPUResetSucceeded {
		t.Fatalf("journaled answer %+v, want Succeeded", e.Report)
	}
	if len(forgotten) != 1 || forgotten[0] != snap.GPUs[1].PCIBusID {
		t.Errorf("forgot %v, want [%s]", forgotten, snap.GPUs[1].PCIBusID)
	}
}
