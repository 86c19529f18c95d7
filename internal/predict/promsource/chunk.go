package promsource

import (
	"context"
	"math"
	"strconv"
	"sync"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"golang.org/x/sync/errgroup"

	"github.com/gpuheal/gpuheal/internal/predict"
	"github.com/gpuheal/gpuheal/internal/predict/trace"
)

// chunk holds every slot's values for n steps from start: one float64
// per column and step, NaN where the series had no point (a NaN reading
// means the same: not reported).
type chunk struct {
	start time.Time
	n     int
	mu    sync.Mutex
	slots map[string]*slotChunk
}

type slotChunk struct {
	st   *slotState
	cols [numColumns][]float64
	xids []xidSeries
}

type xidSeries struct {
	code uint32
	vals []float64
}

// slotState is what a slot carries from chunk to chunk.
type slotState struct {
	Slot
	enc *trace.Encoder
	// seen: the slot has had a sample (its first one's Xid totals are a
	// baseline).
	seen bool
	// counters are the last values read, kept for unread counters.
	counters [predict.NumCounters]uint64
	xidPrev  map[uint32]float64
}

// chunk runs every query over n steps from step first and turns the
// results into samples. Each query is split into ranges short enough that
// Prometheus loads at most MaxSamples for it.
func (f *fetcher) chunk(ctx context.Context, qs []query, raw map[string]int, first, n int) error {
	step := f.o.Step
	ch := &chunk{start: f.o.Start.Add(time.Duration(first) * step), n: n, slots: map[string]*slotChunk{}}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(f.o.Workers)
	for _, q := range qs {
		sub := min(n, max(1, f.o.MaxSamples/max(1, raw[q.metric])))
		for off := 0; off < n; off += sub {
			m := min(sub, n-off)
			g.Go(func() error {
				r := v1.Range{Start: ch.start.Add(time.Duration(off) * step), End: ch.start.Add(time.Duration(off+m-1) * step), Step: step}
				mat, err := f.c.queryRange(gctx, q.expr, r)
				if err != nil {
					return err
				}
				f.merge(ch, q, mat)
				return nil
			})
		}
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return f.emit(ch)
}

// merge copies a query's result into the chunk's columns.
func (f *fetcher) merge(ch *chunk, q query, mat model.Matrix) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	startMs, stepMs := ch.start.UnixMilli(), f.o.Step.Milliseconds()
	for _, ss := range mat {
		c := q.route(ss.Metric)
		if c == colNone {
			continue
		}
		sc := f.slotOf(ch, ss.Metric)
		var vals []float64
		if c == colXid {
			code, err := strconv.ParseUint(string(ss.Metric["xid"]), 10, 32)
			if err != nil {
				continue // not an Xid code the agent writes
			}
			vals = sc.xidVals(uint32(code), ch.n)
		} else {
			if sc.cols[c] == nil {
				sc.cols[c] = nanSlice(ch.n)
			}
			vals = sc.cols[c]
		}
		for _, p := range ss.Values {
			d := int64(p.Timestamp) - startMs
			if d < 0 || d%stepMs != 0 || d/stepMs >= int64(ch.n) {
				continue // not a step of this chunk: never sent by Prometheus
			}
			vals[d/stepMs] = float64(p.Value)
		}
	}
}

// slotOf finds or makes the chunk's entry for the GPU a series belongs
// to; ch.mu is held.
func (f *fetcher) slotOf(ch *chunk, m model.Metric) *slotChunk {
	node, uuid, index := string(m[model.LabelName(f.o.NodeLabel)]), string(m["uuid"]), string(m["gpu"])
	key := node + "\x00" + uuid
	if uuid == "" {
		key += "\x00" + index // no UUID exported: the slot is the node's index
	}
	if sc, ok := ch.slots[key]; ok {
		return sc
	}
	st, ok := f.slots[key]
	if !ok {
		st = &slotState{Slot: Slot{GPU: -1, Node: node, UUID: uuid, Index: index}, xidPrev: map[uint32]float64{}}
		f.slots[key] = st
	}
	sc := &slotChunk{st: st}
	ch.slots[key] = sc
	return sc
}

func (sc *slotChunk) xidVals(code uint32, n int) []float64 {
	for _, x := range sc.xids {
		if x.code == code {
			return x.vals
		}
	}
	sc.xids = append(sc.xids, xidSeries{code: code, vals: nanSlice(n)})
	return sc.xids[len(sc.xids)-1].vals
}

func nanSlice(n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = math.NaN()
	}
	return s
}
