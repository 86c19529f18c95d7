package train

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/gpuheal/gpuheal/internal/predict"
	"github.com/gpuheal/gpuheal/internal/predict/gbt"
	"github.com/gpuheal/gpuheal/internal/predict/trace"
)

// nearWindow: rows this close before a failure (but outside the horizon)
// are sampled more densely; they are where early alarms come from.
const nearWindow = 6 * time.Hour

// rows is what the sampling pass keeps of the traces.
type rows struct {
	train, valid gbt.Data
	positives    int
	samples      int64
}

// gpuRows is one slot's kept rows before they are merged in GPU order.
type gpuRows struct {
	train, valid gbt.Data
	positives    int
	samples      int64
}

// sampleRows streams every sample once through predict.State and keeps a
// stratified, weighted sample of feature rows.
func sampleRows(ctx context.Context, sets []*trace.Set, o *Options) (*rows, error) {
	out := &rows{train: gbt.Data{Features: predict.NumFeatures}, valid: gbt.Data{Features: predict.NumFeatures}}
	horizon := o.Horizon
	for _, set := range sets {
		per := make([]gpuRows, set.Manifest.GPUs)
		err := set.ForEachGPU(ctx, o.Workers, func(_, gpu int, d *trace.Decoder) error {
			r := &per[gpu]
			r.train.Features, r.valid.Features = predict.NumFeatures, predict.NumFeatures
			dst := &r.train
			if isValidation(o, set.Manifest.Seed, gpu) {
				dst = &r.valid
			}
			labels := set.Manifest.LabelsFor(gpu)
			st := predict.NewState()
			var s predict.Sample
			for i := uint64(0); ; i++ {
				err := d.Next(&s)
				if errors.Is(err, io.EOF) {
					return nil
				}
				if err != nil {
					return err
				}
				out, replaced, next := labels.At(s.Time)
				if replaced {
					st = predict.NewState()
				}
				if out {
					continue
				}
				r.samples++
				f := st.Update(&s)
				var until time.Duration = -1
				if next != nil {
					until = next.Time.Sub(s.Time)
				}
				y, rate := float32(0), o.QuietRate
				switch {
				case until > 0 && until <= horizon:
					y, rate = 1, 1
					r.positives++
				case until > 0 && until <= nearWindow:
					rate = o.NearRate
				case !predict.Quiet(f):
					rate = o.ActiveRate
				}
				if rate < 1 && unit(o.Seed, set.Manifest.Seed, uint64(gpu), i) >= rate {
					continue
				}
				dst.Add(f, y, float32(1/rate))
			}
		})
		if err != nil {
			return nil, err
		}
		for i := range per {
			out.train.Append(&per[i].train)
			out.valid.Append(&per[i].valid)
			out.positives += per[i].positives
			out.samples += per[i].samples
			per[i] = gpuRows{} // merged: let it go before the next set
		}
	}
	return out, nil
}

// isValidation puts a fixed share of GPU slots, by hash, in validation.
func isValidation(o *Options, traceSeed uint64, gpu int) bool {
	return unit(o.Seed^0xa5a5a5a5, traceSeed, uint64(gpu), 1<<63) < o.ValidationShare
}

// unit hashes its inputs to [0,1): sampling that does not depend on the
// order workers see GPUs in.
func unit(vals ...uint64) float64 {
	h := uint64(0x243f6a8885a308d3)
	for _, v := range vals {
		h = mix(h ^ v)
	}
	return float64(h>>11) / (1 << 53)
}

func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
