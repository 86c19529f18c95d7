package train

import (
	"fmt"
	"log/slog"
	"runtime"

	"github.com/gpuheal/gpuheal/internal/predict/evaluate"
	"github.com/gpuheal/gpuheal/internal/predict/gbt"
)

// Options control training.
type Options struct {
	// Traces are trace directories (internal/predict/trace).
	Traces []string
	evaluate.Definitions
	Params gbt.Params
	// ValidationShare of GPU slots is held out: for early stopping and to
	// choose the threshold.
	ValidationShare float64
	// MinPrecision: the threshold is the lowest whose event-level
	// precision on the held-out slots is at least this.
	MinPrecision float64
	// Sampling keeps every positive row (the GPU fails within the
	// horizon) and these shares of the others, weighting each kept row by
	// the inverse of its share: NearRate within 6 h before a failure,
	// ActiveRate when the features show anything (predict.Quiet is
	// false), QuietRate otherwise.
	NearRate, ActiveRate, QuietRate float64
	// PositiveWeight multiplies the weight of positive rows, so that the
	// rare failures shape the trees; the model's base log-odds are shifted
	// back by its logarithm, so scores stay probabilities under the
	// training traces' failure rate.
	PositiveWeight float64
	// Seed drives the sampling and the validation split.
	Seed    uint64
	Workers int
	// Command is recorded in the model file (how to make it again).
	Command string
	Log     *slog.Logger
}

// DefaultOptions are what `gpuheal model train` uses.
func DefaultOptions() Options {
	return Options{
		Definitions: evaluate.DefaultDefinitions(), Params: gbt.DefaultParams(),
		ValidationShare: 0.25, MinPrecision: 0.95,
		NearRate: 0.25, ActiveRate: 0.02, QuietRate: 0.001, PositiveWeight: 100, Seed: 1,
	}
}

func (o *Options) complete() error {
	if o.Workers <= 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if err := o.Check(); err != nil {
		return err
	}
	switch {
	case len(o.Traces) == 0:
		return fmt.Errorf("no trace directories")
	case !(o.ValidationShare > 0 && o.ValidationShare < 1):
		return fmt.Errorf("validation share %v: want between 0 and 1", o.ValidationShare)
	case !(o.PositiveWeight >= 1):
		return fmt.Errorf("positive weight %v: want at least 1", o.PositiveWeight)
	case !(o.MinPrecision > 0 && o.MinPrecision <= 1):
		return fmt.Errorf("minimum precision %v: want in (0,1]", o.MinPrecision)
	}
	for _, r := range []float64{o.NearRate, o.ActiveRate, o.QuietRate} {
		if !(r > 0 && r <= 1) {
			return fmt.Errorf("sampling rate %v: want in (0,1]", r)
		}
	}
	return nil
}
