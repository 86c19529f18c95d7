package train

import (
	"context"
	"testing"

	"github.com/gpuheal/gpuheal/internal/fleetsim"
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

func TestTrainIsDeterministic(t *testing.T) {
	dir := smallFleet(t, 13, 8)
	o := smallOptions(dir)
	o.Params.Trees = 5
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
