package predictor

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
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/gpuheal/gpuheal/internal/agent/exporter"
	"github.com/gpuheal/gpuheal/internal/analyzer"
	"github.com/gpuheal/gpuheal/internal/finding"
	"github.com/gpuheal/gpuheal/internal/gpu/sim"
	"github.com/gpuheal/gpuheal/internal/predict"
)

// predictRig is the agent's collection path on a simulated 8-GPU node
// whose clock the test steps by the model's 30 s slot per collection: the
// predictor scores each snapshot before the exporter renders it.
type predictRig struct {
	clk  *clocktesting.FakeClock
	node *sim.Node
	exp  *exporter.Exporter
	pred *Predictor
	// alarms are all the predictor handed to the publisher.
	alarms []Alarm
	// render has the exporter render every snapshot, as the agent does;
	// only the metrics test needs it, and it is most of a step's time.
	render bool
}

func newPredictRig(t *testing.T, pm *Model) *predictRig {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))
	node, err := sim.New(sim.Options{NodeName: "gpu-node-1", GPUs: 8, Seed: 1, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	exp := exporter.New(exporter.Options{})
	r := &predictRig{clk: clk, node: node, exp: exp, pred: New(pm, predict.Interval, slog.New(slog.DiscardHandler))}
	if err := exp.Registry().Register(r.pred.Metrics()); err != nil {
		t.Fatal(err)
	}
	r.pred.Publish = func(_ float64, alarms []Alarm) { r.alarms = append(r.alarms, alarms...) }
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
	snap, err := r.node.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	r.pred.Observe(snap)
	if r.render {
		r.exp.Update(snap, []exporter.CollectorResult{{Name: "gpu", Success: true}})
	}
	r.clk.Step(predict.Interval)
}

// risks are the last snapshot's, by GPU index.
func (r *predictRig) risks(t *testing.T) map[int]float64 {
	t.Helper()
	out := map[int]float64{}
	for _, g := range r.pred.lastRisks() {
		i, err := strconv.Atoi(g.gpu)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = g.risk
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

func defaultPredictorModel(t testing.TB) *Model {
	t.Helper()
	pm, err := Load(Options{})
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

// A rising ECC and PCIe replay burst on GPU 2 raises its risk past the
// shipped model's threshold once, and only GPU 2's; the alarm's Event
// text names the GPU, the threshold and that no repair follows.
func TestPredictorAlarmsOnceOnAPrecursor(t *testing.T) {
	pm := defaultPredictorModel(t)
	r := newPredictRig(t, pm)
	var gpu2 []float64
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
	}
	if n := crossings(gpu2, pm.threshold); n != 1 {
		t.Fatalf("the shipped model's risk for this burst crossed %d times (risks %.3f); the test expects one", n, gpu2)
	}
	if len(r.alarms) != 1 || r.alarms[0].index != 2 || r.alarms[0].Key() != r.alarms[0].uuid {
		t.Fatalf("alarms %+v, want one for GPU 2 keyed by its UUID", r.alarms)
	}
	msg := r.alarms[0].Message()
	for _, want := range []string{"GPU 2 (" + r.alarms[0].uuid + ")", "threshold " + strconv.FormatFloat(pm.threshold, 'f', 3, 64), "no repair"} {
		if !strings.Contains(msg, want) {
			t.Errorf("alarm message %q lacks %q", msg, want)
		}
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

func compiled(t *testing.T, f *predict.File) *Model {
	t.Helper()
	m, err := predict.Compile(f)
	if err != nil {
		t.Fatal(err)
	}
	return &Model{model: m, threshold: m.Threshold, source: "test", digest: "000000000000"}
}

// An alarm re-arms only once the risk has fallen below the hysteresis:
// errors every interval make one alarm, a quiet spell re-arms, the next
// errors alarm again.
func TestPredictorRearmsBelowHysteresis(t *testing.T) {
	r := newPredictRig(t, compiled(t, sbeModel(t)))
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
	r := newPredictRig(t, defaultPredictorModel(t))
	r.render = true
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
	r.pred.Observe(nil)
	if n := len(r.pred.lastRisks()); n != 0 {
		t.Errorf("after a failed collection: %d risks, want none", n)
	}
}

// TestPredictedFailureCondition: the condition is True exactly while a GPU
// is alarmed, its transition time moves only when it flips, and its
// message does not change while it stays True (no patch per interval).
func TestPredictedFailureCondition(t *testing.T) {
	r := newPredictRig(t, compiled(t, sbeModel(t)))
	var conds []analyzer.ConditionStatus
	r.pred.Condition = func(c analyzer.ConditionStatus) { conds = append(conds, c) }
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
