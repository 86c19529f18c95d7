package agent

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/agent/exporter"
	"github.com/gpuheal/gpuheal/internal/agent/kubecore/kubecorefake"
	"github.com/gpuheal/gpuheal/internal/agent/predictor"
	"github.com/gpuheal/gpuheal/internal/gpu/sim"
	"github.com/gpuheal/gpuheal/internal/predict"
	"github.com/gpuheal/gpuheal/internal/testproc"
)

func startFake(t *testing.T, node string) *kubecorefake.API {
	t.Helper()
	api, err := kubecorefake.Start(node)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(api.Close)
	return api
}

// sbeModelFile writes a one-split model: risk 0.993 while the GPU had
// corrected ECC errors in the last 5 minutes, 0.007 otherwise; threshold
// 0.5. It crosses at once, so the whole path takes a few intervals.
func sbeModelFile(t *testing.T) string {
	t.Helper()
	m, err := predict.Default()
	if err != nil {
		t.Fatal(err)
	}
	f := m.File()
	i := slices.Index(f.Features, "sbe_5m")
	if i < 0 {
		t.Fatal("feature sbe_5m not found")
	}
	one := predict.File{Format: f.Format, Version: f.Version, FeatureSet: f.FeatureSet, Features: f.Features,
		IntervalSeconds: f.IntervalSeconds, HorizonSeconds: f.HorizonSeconds, MinLeadSeconds: f.MinLeadSeconds,
		Threshold: 0.5, Trees: []predict.Tree{{Nodes: []predict.Node{predict.Split(i, 0.5, 1, 2), predict.Leaf(-5), predict.Leaf(5)}}}}
	data, err := json.Marshal(&one)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "sbe.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// The whole path as Run wires it: corrected ECC errors on GPU 2 of a
// simulated node raise its risk past the threshold; the node annotation
// follows the highest risk, patched only when its two decimals change,
// and one warning Event names the GPU, however long the risk stays up.
func TestPredictorWarnsOnTheNode(t *testing.T) {
	api := startFake(t, "gpu-node-1")
	clk := clocktesting.NewFakeClock(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))
	node, err := sim.New(sim.Options{NodeName: "gpu-node-1", GPUs: 8, Seed: 1, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	pm, err := predictor.Load(predictor.Options{ModelFile: sbeModelFile(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	exp := exporter.New(exporter.Options{})
	log := slog.New(slog.DiscardHandler)
	// The publishers run on the real clock: their retries must not wait
	// for the test to step the simulated one.
	pred, err := startPredictor(ctx, &Options{NodeName: "gpu-node-1", Interval: predict.Interval}, pm, exp, api.Client, nil, log)
	if err != nil {
		t.Fatal(err)
	}
	c := &collector{src: node, expectedGPUs: func() int { return 0 }, exp: exp, log: log, now: clk.Now, beforeExport: pred.Observe}
	maxRisk := 0.0
	pred.Publish = wrapPublish(pred.Publish, &maxRisk)
	for i := range 8 {
		if i >= 2 && i < 6 {
			if err := node.Inject(sim.Fault{Kind: sim.KindSBE, GPU: 2, Params: map[string]string{"count": "3"}}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := c.collectOnce(ctx, 5*time.Second); err != nil {
			t.Fatal(err)
		}
		clk.Step(predict.Interval)
	}
	last := strconv.FormatFloat(maxRisk, 'f', 2, 64)
	if last != "0.99" {
		t.Fatalf("highest risk %s after the errors, want 0.99", last)
	}
	testproc.EventuallyTrue(t, 10*time.Second, "the annotation of the last snapshot and the Event", func() bool {
		v, _ := api.Annotation(v1alpha1.AnnotationFailureRisk)
		return v == last && len(api.EventsWithReason(v1alpha1.EventReasonGPUFailurePredicted)) == 1
	})
	ev := api.EventsWithReason(v1alpha1.EventReasonGPUFailurePredicted)[0]
	if ev.Count != 1 || ev.Type != "Warning" || ev.InvolvedObject.Name != "gpu-node-1" || !strings.Contains(ev.Message, "GPU 2 (") {
		t.Errorf("event %+v; want one Warning on gpu-node-1 naming GPU 2", ev)
	}
	values := api.NodePatches()
	for i := 1; i < len(values); i++ {
		if values[i] == values[i-1] {
			t.Errorf("node patched twice in a row with the same value: %s", values[i])
		}
	}
	if len(values) > 2 {
		t.Errorf("node patches %q for risks 0.01 then 0.99: not only on change", values)
	}
}

// wrapPublish records the highest risk of the last snapshot.
func wrapPublish(next func(float64, []predictor.Alarm), maxRisk *float64) func(float64, []predictor.Alarm) {
	return func(m float64, a []predictor.Alarm) {
		*maxRisk = m
		next(m, a)
	}
}

// With the predictor off, a risk left on the Node by an earlier run is
// removed (the health score would go on counting it), and nothing else is
// registered or sent.
func TestPredictorOffRemovesTheAnnotation(t *testing.T) {
	api := startFake(t, "n1")
	api.SetAnnotation(v1alpha1.AnnotationFailureRisk, "0.80")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o := validOptions()
	o.NodeName = "n1"
	exp := exporter.New(exporter.Options{})
	pred, err := startPredictor(ctx, &o, nil, exp, api.Client, nil, slog.New(slog.DiscardHandler))
	if pred != nil || err != nil {
		t.Fatalf("startPredictor with --predictor=off: %v, %v; want nothing started", pred, err)
	}
	testproc.EventuallyTrue(t, 10*time.Second, "the annotation removed", func() bool {
		_, ok := api.Annotation(v1alpha1.AnnotationFailureRisk)
		return !ok
	})
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
