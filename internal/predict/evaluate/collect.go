package evaluate

import (
	"context"
	"errors"
	"io"
	"runtime"

	"github.com/gpuheal/gpuheal/internal/predict"
	"github.com/gpuheal/gpuheal/internal/predict/trace"
	"github.com/gpuheal/gpuheal/internal/xid"
)

// CollectOptions say what to score.
type CollectOptions struct {
	// Floor: only points scoring at least this are kept (the curve ends
	// there). Baseline points are kept when a rule is active.
	Floor float64
	// Include selects GPU slots (all when nil).
	Include func(set, gpu int) bool
	Workers int
}

// Slot identifies a series: which trace set and GPU slot it came from.
type Slot struct {
	Set, GPU int
}

// Collected holds the scored series of every included GPU slot, in (set,
// GPU) order, for the model and for the baseline rules.
type Collected struct {
	Slots    []Slot
	Model    []Series
	Baseline []Series
	Samples  int64 // samples evaluated
}

// Collect streams every sample of the included GPU slots through the
// feature state, the model and the baseline rules. m may be nil (baseline
// only).
func Collect(ctx context.Context, sets []*trace.Set, m *predict.Model, o CollectOptions) (*Collected, error) {
	if o.Workers <= 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	out := &Collected{}
	catalog := xid.Default()
	for si, set := range sets {
		n := set.Manifest.GPUs
		model, base := make([]Series, n), make([]Series, n)
		counts := make([]int64, n)
		err := set.ForEachGPU(ctx, o.Workers, func(_, gpu int, d *trace.Decoder) error {
			if o.Include != nil && !o.Include(si, gpu) {
				return nil
			}
			labels := set.Manifest.LabelsFor(gpu)
			var ms, bs Series
			for _, f := range labels.Failures() {
				ms.Failures = append(ms.Failures, f.Time.Unix())
			}
			bs.Failures = ms.Failures
			st, bl := predict.NewState(), newBaseline(catalog)
			var s predict.Sample
			for {
				err := d.Next(&s)
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					return err
				}
				out, replaced, _ := labels.At(s.Time)
				if replaced {
					st, bl = predict.NewState(), newBaseline(catalog)
				}
				if out {
					continue
				}
				counts[gpu]++
				f := st.Update(&s)
				if m != nil {
					if sc := m.Score(f); sc >= o.Floor {
						ms.Points = append(ms.Points, Point{T: s.Time.Unix(), S: float32(sc)})
					}
				}
				if lv := bl.level(&s); lv > levelNone {
					bs.Points = append(bs.Points, Point{T: s.Time.Unix(), S: float32(lv)})
				}
			}
			model[gpu], base[gpu] = ms, bs
			return nil
		})
		if err != nil {
			return nil, err
		}
		for gpu := range n {
			if o.Include != nil && !o.Include(si, gpu) {
				continue
			}
			out.Slots = append(out.Slots, Slot{si, gpu})
			out.Model = append(out.Model, model[gpu])
			out.Baseline = append(out.Baseline, base[gpu])
			out.Samples += counts[gpu]
		}
	}
	return out, nil
}
