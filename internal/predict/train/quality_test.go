//go:build integration

package train

import (
	"context"
	"testing"

	"github.com/gpuheal/gpuheal/internal/predict/evaluate"
	"github.com/gpuheal/gpuheal/internal/predict/trace"
)

// The model-quality loop trains 80 trees on 60 GPUs' traces: ~40 s under
// the race detector, so it runs with the slow suites, not in make test-unit.

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
