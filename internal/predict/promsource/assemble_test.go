package promsource

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/gpuheal/gpuheal/internal/predict"
)

// TestAssemble reads seven steps of one GPU: the baseline, an increment,
// an agent restart (totals drop), a code that vanishes and comes back, a
// gap, a missing GPU.
func TestAssemble(t *testing.T) {
	nan := math.NaN()
	sc := &slotChunk{st: &slotState{xidPrev: map[uint32]float64{}}}
	col := func(c column, v ...float64) { sc.cols[c] = v }
	col(colMissing, 0, 0, 0, 0, nan, 1, 0)
	col(colGauge0+predict.GaugeMemoryUsedMiB, 3<<20+5, 3<<20, 3<<20, 3<<20, nan, nan, 1<<20)
	col(colGauge0+predict.GaugeSMClockMHz, 1980e6, 1980e6, 1980e6, 1980e6, nan, nan, 345e6)
	col(colPCIeWidth, 16, 16, 8, 16, nan, nan, nan)
	col(colCounter0+predict.CounterPCIeReplay, 7, 9, nan, 9, nan, nan, 2)
	col(colNVLinkUp, 17, 18, 0, nan, nan, nan, nan)
	col(colNVLinkTotal, 18, 18, 0, nan, nan, nan, nan)
	sc.xids = []xidSeries{
		{code: 13, vals: []float64{4, 6, 1, 1, nan, 1, 3}},
		{code: 79, vals: []float64{nan, nan, 2, nan, nan, 3, nan}},
	}
	type want struct {
		ok            bool
		missing       bool
		xids          []uint32
		memMiB, clock float32
		width         uint8
		replay        uint64
		read          bool
	}
	for i, w := range []want{
		{ok: true, memMiB: 3, clock: 1980, width: 16, replay: 7, read: true}, // baseline: no events
		{ok: true, xids: []uint32{13, 13}, memMiB: 3, clock: 1980, width: 16, replay: 9, read: true},
		{ok: true, xids: []uint32{13, 79, 79}, memMiB: 3, clock: 1980, width: 8, replay: 9}, // restart; replay unread keeps 9
		{ok: true, memMiB: 3, clock: 1980, width: 16, replay: 9, read: true},                // 79 vanished: next time from 0
		{ok: false},
		{ok: true, missing: true, xids: []uint32{79, 79, 79}},
		{ok: true, xids: []uint32{13, 13}, memMiB: 1, clock: 345, replay: 2, read: true},
	} {
		var s predict.Sample
		ok := sc.sample(i, t0.Add(time.Duration(i)*30*time.Second), &s)
		if ok != w.ok {
			t.Fatalf("step %d: sample = %v, want %v", i, ok, w.ok)
		}
		if !ok {
			continue
		}
		read := s.CountersRead&(1<<predict.CounterPCIeReplay) != 0
		if s.Missing != w.missing || !slices.Equal(s.Xids, w.xids) {
			t.Errorf("step %d: missing %v, xids %v; want %v, %v", i, s.Missing, s.Xids, w.missing, w.xids)
		}
		if w.missing {
			if !math.IsNaN(float64(s.Gauges[predict.GaugeMemoryUsedMiB])) || s.CountersRead != 0 {
				t.Errorf("step %d: a missing GPU kept readings: %+v", i, s)
			}
			continue
		}
		if s.Gauges[predict.GaugeMemoryUsedMiB] != w.memMiB || s.Gauges[predict.GaugeSMClockMHz] != w.clock ||
			s.PCIeLinkWidth != w.width || s.Counters[predict.CounterPCIeReplay] != w.replay || read != w.read {
			t.Errorf("step %d: memory %v MiB, clock %v MHz, width %d, replay %d (read %v); want %v, %v, %d, %d (%v)", i,
				s.Gauges[predict.GaugeMemoryUsedMiB], s.Gauges[predict.GaugeSMClockMHz], s.PCIeLinkWidth,
				s.Counters[predict.CounterPCIeReplay], read, w.memMiB, w.clock, w.width, w.replay, w.read)
		}
		if wantUp, wantTotal := [...]uint8{17, 18, 0, 0, 0, 0, 0}[i], [...]uint8{18, 18, 0, 0, 0, 0, 0}[i]; s.NVLinkUp != wantUp || s.NVLinkTotal != wantTotal {
			t.Errorf("step %d: NVLink %d of %d up, want %d of %d", i, s.NVLinkUp, s.NVLinkTotal, wantUp, wantTotal)
		}
		if !math.IsNaN(float64(s.Gauges[predict.GaugeTemperatureC])) {
			t.Errorf("step %d: temperature %v, want NaN: never reported", i, s.Gauges[predict.GaugeTemperatureC])
		}
	}
}

func TestStepGrid(t *testing.T) {
	at := time.Date(2026, 3, 1, 0, 0, 10, 5, time.UTC)
	if got := ceilStep(at, 7*time.Second); got.Unix()%7 != 0 || got.Before(at) || got.Sub(at) >= 7*time.Second {
		t.Errorf("ceilStep(%s, 7s) = %s", at, got)
	}
	if got := floorStep(at, 7*time.Second); got.Unix()%7 != 0 || got.After(at) || at.Sub(got) >= 7*time.Second {
		t.Errorf("floorStep(%s, 7s) = %s", at, got)
	}
	if got := ceilStep(t0, 30*time.Second); !got.Equal(t0) {
		t.Errorf("ceilStep of a time on the grid = %s, want it unchanged", got)
	}
}
