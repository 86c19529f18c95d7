package agent

import (
	"context"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/agent/exporter"
	"github.com/gpuheal/gpuheal/internal/analyzer"
	"github.com/gpuheal/gpuheal/internal/finding"
	"github.com/gpuheal/gpuheal/internal/gpu/sim"
	"github.com/gpuheal/gpuheal/internal/predict"
)

// predictRig is an agent's collection path on a simulated 8-GPU node whose
// clock the test steps by the model's 30 s slot per collection.
type predictRig struct {
	clk  *clocktesting.FakeClock
	node *sim.Node
	exp  *exporter.Exporter
	c    *collector
	pred *predictor
	// alarms are all the predictor handed to the publisher.
	alarms []riskAlarm
}

// newPredictRig wires the predictor as Run does; kube nil is standalone.
func newPredictRig(t *testing.T, pm *predictorModel, o *Options, kube rest.Interface) *predictRig {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))
	node, err := sim.New(sim.Options{NodeName: o.NodeName, GPUs: 8, Seed: 1, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	exp := exporter.New(exporter.Options{})
	r := &predictRig{clk: clk, node: node, exp: exp}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	log := slog.New(slog.DiscardHandler)
	r.pred, err = startPredictor(ctx, o, pm, exp, kube, log)
	if err != nil {
		t.Fatal(err)
	}
	publish := r.pred.publish
	r.pred.publish = func(maxRisk float64, alarms []riskAlarm) {
		r.alarms = append(r.alarms, alarms...)
		if publish != nil {
			publish(maxRisk, alarms)
		}
	}
	r.c = &collector{src: node, expectedGPUs: func() int { return 0 }, exp: exp, log: log, now: clk.Now,
		beforeExport: r.pred.observe}
	return r
}

// step injects faults, collects once and moves the clock one slot on.
func (r *predictRig) step(t *testing.T, faults ...sim.Fault) {
	t.Helper()
	for _, f := range faults {
		if err := r.node.Inject(f); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.c.collectOnce(context.Background(), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	r.clk.Step(predict.Interval)
}

// risks reads gpuheal_gpu_failure_risk from the exporter's registry, by
// GPU index.
func (r *predictRig) risks(t *testing.T) map[int]float64 {
	t.Helper()
	out := map[int]float64{}
	for _, m := range family(t, r.exp.Registry(), "gpuheal_gpu_failure_risk").GetMetric() {
		i, err := strconv.Atoi(labelOf(m, "gpu"))
		if err != nil {
			t.Fatal(err)
		}
		out[i] = m.GetGauge().GetValue()
	}
	return out
}

func family(t *testing.T, g prometheus.Gatherer, name string) *dto.MetricFamily {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf
		}
	}
	t.Fatalf("no %s gathered", name)
	return nil
}

func labelOf(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func defaultPredictorModel(t *testing.T) *predictorModel {
	t.Helper()
	pm, err := loadPredictorModel(&Options{})
	if err != nil {
		t.Fatal(err)
	}
	return pm
}

// burst is the precursor the shipped model reacts to: corrected ECC errors
// and PCIe replays on one GPU, both rising every interval.
func burst(gpu, i int) []sim.Fault {
	return []sim.Fault{
		{Kind: sim.KindSBE, GPU: gpu, Params: map[string]string{"count": strconv.Itoa(1 + i)}},
		{Kind: sim.KindPCIeReplay, GPU: gpu, Params: map[string]string{"count": strconv.Itoa(1 + 4*i)}},
	}
}

// The whole path with the shipped model: a rising ECC and PCIe replay
// burst on GPU 2 raises its gauge past the threshold; the node annotation
// follows the highest risk, patched only when its two decimals change;
// one warning Event names the GPU, and no more while the risk stays up.
func TestPredictorWarnsOnceOnAPrecursor(t *testing.T) {
	api, kube := newFakeAPI(t, "gpu-node-1")
	o := &Options{NodeName: "gpu-node-1", Interval: predict.Interval}
	pm := defaultPredictorModel(t)
	r := newPredictRig(t, pm, o, kube)

	var gpu2 []float64
	above := 0
	for i := range 60 {
		var faults []sim.Fault
		if i >= 10 && i < 27 {
			faults = burst(2, i-10)
		}
		r.step(t, faults...)
		risks := r.risks(t)
		if len(risks) != 8 {
			t.Fatalf("interval %d: %d risk series, want 8", i, len(risks))
		}
		for g, v := range risks {
			if g != 2 && v >= pm.threshold {
				t.Fatalf("interval %d: healthy GPU %d has risk %.3f ≥ threshold %.3f", i, g, v, pm.threshold)
			}
		}
		gpu2 = append(gpu2, risks[2])
		if risks[2] >= pm.threshold {
			above++
		}
	}
	if above < 3 {
		t.Fatalf("GPU 2 was at or above the threshold %.3f in %d intervals, want several; risks %.3f", pm.threshold, above, gpu2)
	}
	if want := crossings(gpu2, pm.threshold); want != 1 {
		t.Fatalf("the shipped model's risk for this burst crossed %d times (risks %.3f); the test expects one", want, gpu2)
	}
	if len(r.alarms) != 1 || r.alarms[0].index != 2 {
		t.Fatalf("alarms %+v, want one for GPU 2", r.alarms)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	last := strconv.FormatFloat(slices.Max(lastValues(r.risks(t))), 'f', 2, 64)
	waitFor(ctx, t, "the annotation of the last snapshot and the Event", func() bool {
		v, _ := api.annotation(v1alpha1.AnnotationFailureRisk)
		return v == last && len(api.eventsWithReason(v1alpha1.EventReasonGPUFailurePredicted)) == 1
	})
	ev := api.eventsWithReason(v1alpha1.EventReasonGPUFailurePredicted)[0]
	if ev.Count != 1 || ev.Type != "Warning" || ev.InvolvedObject.Name != "gpu-node-1" {
		t.Errorf("event: count %d, type %s, object %s; want one Warning on gpu-node-1", ev.Count, ev.Type, ev.InvolvedObject.Name)
	}
	for _, want := range []string{"GPU 2 (" + r.alarms[0].uuid + ")", "threshold " + strconv.FormatFloat(pm.threshold, 'f', 3, 64), "no repair"} {
		if !strings.Contains(ev.Message, want) {
			t.Errorf("event message %q lacks %q", ev.Message, want)
		}
	}

	// Patched only on a change of the two-decimal value.
	values := api.patches()
	for i := 1; i < len(values); i++ {
		if values[i] == values[i-1] {
			t.Errorf("node patched twice in a row with the same value: %s", values[i])
		}
	}
	if len(values) >= 60 {
		t.Errorf("%d node patches for 60 intervals: not only on change", len(values))
	}
}

// crossings counts the alarms a risk series makes under the rule the
// predictor follows: alarm at the threshold, re-arm below rearmFraction
// of it.
func crossings(risks []float64, threshold float64) int {
	n, alarmed := 0, false
	for _, r := range risks {
		switch {
		case !alarmed && r >= threshold:
			n++
			alarmed = true
		case alarmed && r < threshold*rearmFraction:
			alarmed = false
		}
	}
	return n
}

func lastValues(m map[int]float64) []float64 {
	out := make([]float64, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// sbeModel is a one-split model: risk 0.993 while the GPU had corrected
// ECC errors in the last 5 minutes, 0.007 otherwise; threshold 0.5.
func sbeModel(t *testing.T) *predict.File {
	t.Helper()
	f := defaultPredictorModel(t).model.File()
	i := slices.Index(f.Features, "sbe_5m")
	if i < 0 {
		t.Fatal("feature sbe_5m not found")
	}
	return &predict.File{Format: f.Format, Version: f.Version, FeatureSet: f.FeatureSet, Features: f.Features,
		IntervalSeconds: f.IntervalSeconds, HorizonSeconds: f.HorizonSeconds, MinLeadSeconds: f.MinLeadSeconds,
		Threshold: 0.5, Trees: []predict.Tree{{Nodes: []predict.Node{predict.Split(i, 0.5, 1, 2), predict.Leaf(-5), predict.Leaf(5)}}}}
}

func compiled(t *testing.T, f *predict.File) *predictorModel {
	t.Helper()
	m, err := predict.Compile(f)
	if err != nil {
		t.Fatal(err)
	}
	return &predictorModel{model: m, threshold: m.Threshold, source: "test", digest: "000000000000"}
}

// An alarm re-arms only once the risk has fallen below the hysteresis:
// errors every interval make one alarm, a quiet spell re-arms, the next
// errors alarm again.
func TestPredictorRearmsBelowHysteresis(t *testing.T) {
	r := newPredictRig(t, compiled(t, sbeModel(t)), &Options{Interval: predict.Interval}, nil)
	sbe := sim.Fault{Kind: sim.KindSBE, GPU: 5, Params: map[string]string{"count": "3"}}
	var at []int
	for i := range 40 {
		n := len(r.alarms)
		if (i >= 2 && i < 8) || i == 25 {
			r.step(t, sbe)
		} else {
			r.step(t)
		}
		for _, a := range r.alarms[n:] {
			if a.index != 5 {
				t.Fatalf("interval %d: alarm for GPU %d, want 5", i, a.index)
			}
			at = append(at, i)
		}
	}
	if want := []int{2, 25}; !slices.Equal(at, want) {
		t.Fatalf("alarms at intervals %v, want %v", at, want)
	}
}

// The risk series carry the labels of the exporter's per-GPU series, so
// they join onto them, and pass Prometheus' naming rules.
func TestPredictMetricsLabelsAndLint(t *testing.T) {
	r := newPredictRig(t, defaultPredictorModel(t), &Options{Interval: predict.Interval}, nil)
	r.step(t)
	names := func(m *dto.Metric) []string {
		var out []string
		for _, l := range m.GetLabel() {
			out = append(out, l.GetName())
		}
		slices.Sort(out)
		return out
	}
	temp := family(t, r.exp.Registry(), "gpuheal_gpu_temperature_celsius").GetMetric()[0]
	risk := family(t, r.exp.Registry(), "gpuheal_gpu_failure_risk").GetMetric()[0]
	if !slices.Equal(names(risk), names(temp)) {
		t.Errorf("risk labels %v, temperature labels %v", names(risk), names(temp))
	}
	info := family(t, r.exp.Registry(), "gpuheal_predictor_model_info").GetMetric()[0]
	if labelOf(info, "source") != "embedded" || len(labelOf(info, "sha256")) != 12 {
		t.Errorf("model info labels %v", info.GetLabel())
	}
	th := family(t, r.exp.Registry(), "gpuheal_predictor_threshold").GetMetric()[0]
	if got := th.GetGauge().GetValue(); got != r.pred.pm.model.Threshold {
		t.Errorf("threshold %v, want the model's %v", got, r.pred.pm.model.Threshold)
	}

	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(newPredictMetrics(r.pred))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}

	// A failed backend drops the risks with the GPU series.
	r.pred.observe(nil)
	if n := len(r.pred.lastRisks()); n != 0 {
		t.Errorf("after a failed collection: %d risks, want none", n)
	}
}

// TestPredictedFailureCondition: the condition is True exactly while a GPU
// is alarmed, its transition time moves only when it flips, and its
// message does not change while it stays True (no patch per interval).
func TestPredictedFailureCondition(t *testing.T) {
	r := newPredictRig(t, compiled(t, sbeModel(t)), &Options{Interval: predict.Interval}, nil)
	var conds []analyzer.ConditionStatus
	r.pred.condition = func(c analyzer.ConditionStatus) { conds = append(conds, c) }
	sbe := sim.Fault{Kind: sim.KindSBE, GPU: 5, Params: map[string]string{"count": "3"}}
	for i := range 40 {
		n := len(r.alarms)
		if i >= 2 && i < 8 {
			r.step(t, sbe)
		} else {
			r.step(t)
		}
		c := conds[len(conds)-1]
		if len(r.alarms) > n && c.Status != analyzer.StatusTrue {
			t.Fatalf("interval %d: GPU alarmed, condition %s", i, c.Status)
		}
		if c.Status == analyzer.StatusTrue && (!strings.Contains(c.Message, "GPU 5 (") || c.Action != finding.ActionNone) {
			t.Fatalf("interval %d: message %q names no GPU 5 or recommends an action", i, c.Message)
		}
	}
	flips, trues := 0, 0
	for i := 1; i < len(conds); i++ {
		prev, c := conds[i-1], conds[i]
		if c.Status == analyzer.StatusTrue {
			trues++
		}
		if c.Status != prev.Status {
			flips++
			if !c.LastTransitionTime.After(prev.LastTransitionTime) {
				t.Errorf("interval %d: status flipped, transition time stayed %s", i, c.LastTransitionTime)
			}
			continue
		}
		if !c.LastTransitionTime.Equal(prev.LastTransitionTime) {
			t.Errorf("interval %d: transition time moved without a flip", i)
		}
		if c.Message != prev.Message {
			t.Errorf("interval %d: message changed while %s: %q → %q", i, c.Status, prev.Message, c.Message)
		}
	}
	// False first, True from the alarm, False again once re-armed.
	if conds[0].Status != analyzer.StatusFalse || flips != 2 || trues == 0 {
		t.Fatalf("first %s, %d flips, %d True intervals; want False, 2 flips and some True", conds[0].Status, flips, trues)
	}
}
