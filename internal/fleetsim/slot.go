package fleetsim

import (
	"slices"
	"time"

	"github.com/gpuheal/gpuheal/internal/predict"
	"github.com/gpuheal/gpuheal/internal/predict/trace"
)

// slotResult is one simulated GPU slot: its file and its labels.
type slotResult struct {
	file     []byte
	failures []trace.Failure
	episodes []trace.Episode
}

// simulateSlot runs one GPU slot from its plan, sample by sample.
func simulateSlot(o *Options, gpu int) (slotResult, error) {
	r := newRNG(o.Seed, gpu)
	total := int64(o.Days * 24 * stepsPerHour)
	p := planGPU(r, o, gpu, total)
	at := func(step int64) time.Time { return o.Start.Add(time.Duration(step) * predict.Interval) }

	var res slotResult
	for _, f := range p.failures {
		tf := trace.Failure{GPU: gpu, Time: at(f.step), RepairedAt: at(f.repair), Class: string(f.spec.Class)}
		if f.precursor != nil {
			s := at(f.precursor.start)
			tf.PrecursorStart = &s
		}
		res.failures = append(res.failures, tf)
	}
	for _, e := range p.episodes {
		if e.kind >= benignAppCrashes {
			res.episodes = append(res.episodes, trace.Episode{GPU: gpu, Kind: kindNames[e.kind], Start: at(e.start), End: at(min(e.end, total))})
		}
	}

	enc := trace.NewEncoder(gpu, o.Start, predict.Interval)
	var (
		b       = newBoard(r, 0, true)
		boardNo = 0
		down    = false
		nextEp  = 0
		active  []*episode
		fx      effects
		s       predict.Sample
		xids    []uint32
	)
	for step := int64(0); step < total; step++ {
		if boardNo+1 < len(p.boardStarts) && step == p.boardStarts[boardNo+1] {
			boardNo++
			b, down, active = newBoard(r, step, false), false, active[:0]
		}
		for nextEp < len(p.episodes) && p.episodes[nextEp].start <= step {
			active = append(active, p.episodes[nextEp])
			nextEp++
		}
		active = slices.DeleteFunc(active, func(e *episode) bool { return e.end <= step })
		s = predict.Sample{Time: at(step)}
		xids = xids[:0]
		if down {
			missing(&s, b)
		} else {
			fx = effects{points: fx.points[:0]}
			for _, e := range active {
				e.apply(step, r, &fx)
			}
			b.workload(r, step)
			for _, pt := range fx.points {
				xids = b.point(r, step, pt, xids)
			}
			xids = b.count(r, &fx, xids)
			b.gauges(r, step, fx.tempOffset, &s)
			gone := false
			if boardNo < len(p.failures) && step == p.failures[boardNo].step {
				xids, gone = b.fail(r, p.failures[boardNo].spec.Class, xids)
				down = true
			}
			s.Counters, s.CountersRead = b.counters, predict.AllCountersRead
			if gone {
				missing(&s, b)
			}
		}
		s.Xids = xids
		if err := enc.Add(&s); err != nil {
			return slotResult{}, err
		}
	}
	res.file = enc.Bytes()
	return res, nil
}

// missing turns s into the reading of a GPU that does not answer.
func missing(s *predict.Sample, b *board) {
	*s = predict.Sample{Time: s.Time, Missing: true, Xids: s.Xids, NVLinkTotal: nvlinks, Counters: b.counters}
	for i := range s.Gauges {
		s.Gauges[i] = predict.NaN
	}
}
