package promsource

import (
	"math"
	"slices"
	"time"

	"github.com/gpuheal/gpuheal/internal/predict"
	"github.com/gpuheal/gpuheal/internal/predict/trace"
)

// sample assembles step i of the slot into s; false when the GPU has no
// point at all there (a gap). doc.go says how each field is made.
func (sc *slotChunk) sample(i int, t time.Time, s *predict.Sample) bool {
	if !sc.present(i) {
		return false
	}
	st := sc.st
	xids := st.xidEvents(sc, i, s.Xids[:0])
	st.seen = true
	*s = predict.Sample{Time: t, Xids: xids, Counters: st.counters}
	for g := range s.Gauges {
		s.Gauges[g] = predict.NaN
	}
	if sc.val(colMissing, i) == 1 {
		s.Missing = true // the agent exports no other reading of a lost GPU
		return true
	}
	for g := range predict.NumGauges {
		v := sc.val(colGauge0+column(g), i)
		switch g {
		case predict.GaugeMemoryUsedMiB:
			v = math.Floor(v / (1 << 20)) // as predict.SampleFromSnapshot: bytes >> 20
		case predict.GaugeSMClockMHz:
			v /= 1e6
		}
		s.Gauges[g] = float32(v)
	}
	s.ClockEventReasons = uint64(sc.whole(colClock, i, maxUint))
	s.RecoveryAction = uint8(sc.whole(colRecovery, i, 255))
	s.PCIeLinkGen, s.PCIeLinkGenMax = uint8(sc.whole(colPCIeGen, i, 255)), uint8(sc.whole(colPCIeGenMax, i, 255))
	s.PCIeLinkWidth, s.PCIeLinkWidthMax = uint8(sc.whole(colPCIeWidth, i, 255)), uint8(sc.whole(colPCIeWidthMax, i, 255))
	s.NVLinkUp, s.NVLinkTotal = uint8(sc.whole(colNVLinkUp, i, 255)), uint8(sc.whole(colNVLinkTotal, i, 255))
	s.RemappedRowsPending = sc.val(colRemapPending, i) == 1
	s.RemappedRowsFailure = sc.val(colRemapFailure, i) == 1
	for k := range predict.NumCounters {
		if v := sc.val(colCounter0+column(k), i); v >= 0 { // false for NaN
			st.counters[k] = uint64(min(math.Round(v), maxUint))
			s.CountersRead |= 1 << k
		}
	}
	s.Counters = st.counters
	return true
}

// maxUint is the largest float64 that converts to a uint64 safely.
const maxUint = float64(1 << 63)

// present: some series of the GPU has a point at step i.
func (sc *slotChunk) present(i int) bool {
	for _, c := range sc.cols {
		if c != nil && !math.IsNaN(c[i]) {
			return true
		}
	}
	for _, x := range sc.xids {
		if !math.IsNaN(x.vals[i]) {
			return true
		}
	}
	return false
}

// val is column c at step i, NaN where absent.
func (sc *slotChunk) val(c column, i int) float64 {
	if sc.cols[c] == nil {
		return math.NaN()
	}
	return sc.cols[c][i]
}

// whole is column c at step i as a whole number in [0, limit]; 0 where
// absent, which Sample reads as unknown.
func (sc *slotChunk) whole(c column, i int, limit float64) float64 {
	v := sc.val(c, i)
	if !(v > 0) {
		return 0
	}
	return math.Round(min(v, limit))
}

// xidEvents turns the Xid totals at step i into events, one entry per
// Xid, appended to out in code order (doc.go: baseline, resets, codes
// that vanish).
func (st *slotState) xidEvents(sc *slotChunk, i int, out []uint32) []uint32 {
	baseline := !st.seen
	for _, x := range sc.xids {
		v := x.vals[i]
		if math.IsNaN(v) {
			continue
		}
		p := st.xidPrev[x.code] // 0 for a code not seen, or that vanished
		st.xidPrev[x.code] = v
		if baseline {
			continue
		}
		d := v - p
		if v < p {
			d = v // the total restarted: the agent did
		}
		for n := math.Round(d); n > 0 && len(out) < trace.MaxXidsPerSample; n-- {
			out = append(out, x.code)
		}
	}
	for code := range st.xidPrev {
		j := slices.IndexFunc(sc.xids, func(x xidSeries) bool { return x.code == code })
		if j < 0 || math.IsNaN(sc.xids[j].vals[i]) {
			delete(st.xidPrev, code)
		}
	}
	return out
}
