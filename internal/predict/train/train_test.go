package train

import (
	"context"
	"testing"

	"github.com/gpuheal/gpuheal/internal/fleetsim"
	"github.com/gpuheal/gpuheal/internal/predict/evaluate"
	"github.com/gpuheal/gpuheal/internal/predict/trace"
)

// smallFleet writes a small fleet with many failures (the published rates
// would give none in a test-sized fleet).
func smallFleet(t testing.TB, seed uint64, gpus int) string {
	t.Helper()
	dir := t.TempDir()
	if _, err := fleetsim.Write(context.Background(), dir, fleetsim.Options{GPUs: gpus, Days: 8, Seed: seed, FailureRate: 15}); err != nil {
		t.Fatal(err)
	}
	return dir
}

func smallOptions(dirs ...string) Options {
	o := DefaultOptions()
	o.Traces = dirs
	o.Params.Trees, o.Params.MaxDepth, o.Params.LearningRate = 80, 4, 0.1
	return o
}

// TestTrainBeatsBaselineOnUnseenSeed is the whole loop, small: train on
// one seed, evaluate on another, and the model must beat the default
// rules on the unseen fleet.
func TestTrainBeatsBaselineOnUnseenSeed(t *testing.T) {
	ctx := context.Background()
	m, sum, err := Train(ctx, smallOptions(smallFleet(t, 11, 60)))
	if err != nil {
		t.Fatal(err)
	}
	if sum.PositiveRows == 0 || sum.Trees == 0 || sum.Validation.Failures == 0 {
		t.Fatalf("summary %+v: want positives, trees and held-out failures", sum)
	}
	set, err := trace.Open(smallFleet(t, 12, 30))
	if err != nil {
		t.Fatal(err)
	}
	r, err := evaluate.Evaluate(ctx, []*trace.Set{set}, m, evaluate.Options{Definitions: evaluate.DefaultDefinitions()})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("model P %.3f R %.3f AP %.3f; baseline P %.3f R %.3f AP %.3f; %d failures",
		r.Precision, r.Recall, r.PRAUC, r.Baseline.Precision, r.Baseline.Recall, r.Baseline.PRAUC, r.Failures)
	if r.PRAUC <= r.Baseline.PRAUC || r.Precision <= r.Baseline.Precision {
		t.Errorf("model PR-AUC %.3f, precision %.3f: want both above the baseline's %.3f, %.3f",
			r.PRAUC, r.Precision, r.Baseline.PRAUC, r.Baseline.Precision)
	}
	if o := r.PrecursorOnsetOracle; o == nil || o.Recall < r.Recall {
		t.Errorf("onset oracle %+v: want a ceiling at least the model's recall %.3f", o, r.Recall)
	}
}

func TestTrainIsDeterministic(t *testing.T) {
	dir := smallFleet(t, 13, 20)
	o := smallOptions(dir)
	o.Params.Trees = 10
	a, _, err := Train(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	o.Workers = 1
	b, _, err := Train(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if a.Threshold != b.Threshold || len(a.File().Trees) != len(b.File().Trees) || string(a.File().Training) != string(b.File().Training) {
		t.Error("training twice on the same traces, with 2 workers and with 1, gave different models")
	}
}

func TestOptionsChecked(t *testing.T) {
	for _, edit := range []func(*Options){
		func(o *Options) { o.Traces = nil },
		func(o *Options) { o.ValidationShare = 1 },
		func(o *Options) { o.QuietRate = 0 },
		func(o *Options) { o.PositiveWeight = 0.5 },
		func(o *Options) { o.MinLead = o.Horizon },
	} {
		o := smallOptions("x")
		edit(&o)
		if _, _, err := Train(context.Background(), o); err == nil {
			t.Errorf("options %+v accepted", o)
		}
	}
}
