package agent

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/agent/exporter"
	"github.com/gpuheal/gpuheal/internal/testenv"
)

// The annotation is patched when its value changes and retried while the
// API server fails; a GPU alarming again counts up its one Event.
func TestRiskPublisherAnnotatesAndCountsUp(t *testing.T) {
	api, kube := newFakeAPI(t, "n1")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p := newRiskPublisher(kube, "n1", slog.New(slog.DiscardHandler))
	go p.run(ctx)
	alarm := riskAlarm{key: "GPU-3333", index: 3, uuid: "GPU-3333", risk: 0.4213, threshold: 0.157, horizon: 30 * time.Minute}
	annotated := func(v string) func() bool {
		return func() bool { got, _ := api.annotation(v1alpha1.AnnotationFailureRisk); return got == v }
	}
	events := func(count int32) func() bool {
		return func() bool {
			evs := api.eventsWithReason(v1alpha1.EventReasonGPUFailurePredicted)
			return len(evs) == 1 && evs[0].Count == count
		}
	}

	p.set(0.4213, []riskAlarm{alarm})
	waitFor(ctx, t, "annotation 0.42 and one Event", func() bool { return annotated("0.42")() && events(1)() })
	ev := api.eventsWithReason(v1alpha1.EventReasonGPUFailurePredicted)[0]
	want := "GPU 3 (GPU-3333): predicted failure risk 0.421 is at or above the threshold 0.157; the failure model expects it may fail within 30 minutes. Warning only: gpuheal starts no repair for a prediction."
	if ev.Message != want || ev.Type != "Warning" || ev.InvolvedObject.Kind != "Node" || ev.InvolvedObject.UID != "uid-1234" {
		t.Errorf("event %+v\nwant message %q on Node n1", ev, want)
	}

	p.set(0.4249, nil) // rounds the same: no patch
	p.set(0.10, nil)
	waitFor(ctx, t, "annotation 0.10", annotated("0.10"))

	api.mu.Lock()
	api.failNext = 3
	api.mu.Unlock()
	alarm.risk = 0.9
	p.set(0.9, []riskAlarm{alarm})
	waitFor(ctx, t, "annotation 0.90 and the Event counted up after failures", func() bool { return annotated("0.90")() && events(2)() })
	if evs := api.eventsWithReason(v1alpha1.EventReasonGPUFailurePredicted); !strings.Contains(evs[0].Message, "risk 0.900") {
		t.Errorf("counted-up event keeps message %q, want the new risk", evs[0].Message)
	}

	var values []string
	for _, b := range api.patches() {
		_, v, _ := strings.Cut(b, v1alpha1.AnnotationFailureRisk+`":`)
		values = append(values, strings.Trim(v, `"}`))
	}
	if want := []string{"0.42", "0.10", "0.90"}; !slices.Equal(values, want) {
		t.Errorf("annotation patches %q, want %q", values, want)
	}
}

// With the predictor off, a risk left on the Node by an earlier run is
// removed (the health score would go on counting it), and nothing else is
// registered or sent.
func TestPredictorOffRemovesTheAnnotation(t *testing.T) {
	api, kube := newFakeAPI(t, "n1")
	api.annotations[v1alpha1.AnnotationFailureRisk] = "0.80"
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	o := validOptions()
	o.NodeName = "n1"
	o.Predictor.Mode = PredictorOff
	pm, err := loadPredictorModel(&o)
	if err != nil {
		t.Fatal(err)
	}
	exp := exporter.New(exporter.Options{})
	pred, err := startPredictor(ctx, &o, pm, exp, kube, slog.New(slog.DiscardHandler))
	if pred != nil || err != nil {
		t.Fatalf("startPredictor with --predictor=off: %v, %v; want nothing started", pred, err)
	}
	waitFor(ctx, t, "the annotation removed", func() bool { _, ok := api.annotation(v1alpha1.AnnotationFailureRisk); return !ok })
	mfs, err := exp.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if strings.Contains(mf.GetName(), "predictor") || strings.Contains(mf.GetName(), "risk") {
			t.Errorf("%s exported with the predictor off", mf.GetName())
		}
	}
}

// The same against the real API server: the merge patches, the Event and
// its count-up, and the removal of the annotation.
func TestRiskPublisherOnRealAPIServer(t *testing.T) {
	env := testenv.ForTest(t, testenv.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	nodes, err := testenv.CreateGPUNodes(ctx, env.Client, "risk", 1)
	if err != nil {
		t.Fatal(err)
	}
	kube, err := clientFor(env.Kubeconfig, 50)
	if err != nil {
		t.Fatal(err)
	}
	p := newRiskPublisher(kube, nodes[0], slog.New(slog.DiscardHandler))
	go p.run(ctx)
	node := func() *corev1.Node {
		var n corev1.Node
		if err := kube.Get().Resource("nodes").Name(nodes[0]).Do(ctx).Into(&n); err != nil {
			t.Fatal(err)
		}
		return &n
	}
	event := func() *corev1.Event {
		var list corev1.EventList
		if err := kube.Get().Namespace(eventNamespace).Resource("events").Do(ctx).Into(&list); err != nil {
			t.Fatal(err)
		}
		for i := range list.Items {
			if e := &list.Items[i]; e.Reason == v1alpha1.EventReasonGPUFailurePredicted && e.InvolvedObject.Name == nodes[0] {
				return e
			}
		}
		return nil
	}
	alarm := riskAlarm{key: "GPU-1111", index: 1, uuid: "GPU-1111", risk: 0.5, threshold: 0.157, horizon: 30 * time.Minute}
	p.set(0.5, []riskAlarm{alarm})
	waitFor(ctx, t, "annotation 0.50 and the Event", func() bool {
		return node().Annotations[v1alpha1.AnnotationFailureRisk] == "0.50" && event() != nil
	})
	p.set(0.61, []riskAlarm{alarm})
	waitFor(ctx, t, "annotation 0.61 and the Event counted up", func() bool {
		e := event()
		return node().Annotations[v1alpha1.AnnotationFailureRisk] == "0.61" && e != nil && e.Count == 2
	})
	if e := event(); e.Type != corev1.EventTypeWarning || e.InvolvedObject.UID != node().UID {
		t.Errorf("event type %s on UID %s, want a Warning on the node's UID %s", e.Type, e.InvolvedObject.UID, node().UID)
	}
	if err := patchRiskAnnotation(ctx, kube, nodes[0], ""); err != nil {
		t.Fatal(err)
	}
	if _, ok := node().Annotations[v1alpha1.AnnotationFailureRisk]; ok {
		t.Error("annotation still there after the removing patch")
	}
}
