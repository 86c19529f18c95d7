package predict

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// randomHistory makes a GPU history that exercises every corner State
// has: bursts of every signal, samples sharing a slot, gaps shorter and
// longer than the ring, a sample out of order, missing readings, counter
// resets, unread counters, unreported gauges.
func randomHistory(seed uint64, n int) []Sample {
	r := rand.New(rand.NewPCG(seed, 7))
	t := time.Date(2026, 3, 1, 0, 0, 7, 0, time.UTC)
	var (
		out      []Sample
		counters [NumCounters]uint64
		temp     = 60.0
	)
	for i := range n {
		switch x := r.IntN(100); {
		case x < 2:
			t = t.Add(time.Duration(1+r.IntN(400)) * Interval) // gaps, some past the ring
		case x < 6:
			t = t.Add(time.Duration(r.IntN(20)) * time.Second) // same slot
		case x < 7:
			t = t.Add(-Interval) // out of order
		default:
			t = t.Add(Interval)
		}
		s := Sample{Time: t, CountersRead: AllCountersRead}
		burst := (i/50)%3 == 0
		for c := range counters {
			if burst && r.IntN(4) == 0 {
				counters[c] += uint64(r.IntN(30))
			}
		}
		if r.IntN(300) == 0 {
			counters[CounterECCCorrected] = 0 // driver reload
		}
		s.Counters = counters
		if r.IntN(50) == 0 {
			s.CountersRead &^= 1 << r.IntN(NumCounters)
		}
		temp += r.NormFloat64()
		s.Gauges = [NumGauges]float32{float32(r.IntN(101)), 1000, float32(math.Round(temp)), 70, 500, 1980}
		if r.IntN(40) == 0 {
			s.Gauges[GaugeTemperatureC] = NaN
		}
		if i < 5 {
			s.Gauges[GaugeTemperatureC], s.Gauges[GaugeUtilizationPercent] = NaN, NaN
		}
		if burst && r.IntN(3) == 0 {
			s.Xids = []uint32{[]uint32{13, 31, 119, 63, 79, 74, 48}[r.IntN(7)]}
		}
		s.ClockEventReasons = uint64(r.IntN(2)) * []uint64{0x1, 0x20, 0x40, 0x60}[r.IntN(4)]
		s.PCIeLinkGen, s.PCIeLinkGenMax, s.PCIeLinkWidth, s.PCIeLinkWidthMax = uint8(4+r.IntN(2)), 5, 16, 16
		s.NVLinkUp, s.NVLinkTotal = uint8(17+r.IntN(2)), 18
		s.RemappedRowsPending = r.IntN(10) == 0
		s.Missing = r.IntN(60) == 0
		out = append(out, s)
	}
	return out
}

func TestStateMatchesBatchDefinitions(t *testing.T) {
	for seed := range uint64(4) {
		h := randomHistory(seed, 1000) // ~8 h of slots: four times the longest window
		want := BatchFeatures(h)
		st := NewState()
		names := FeatureNames()
		for i := range h {
			got := st.Update(&h[i])
			for f := range got {
				if !sameFloat(got[f], want[i][f]) {
					t.Fatalf("seed %d, sample %d (%s): %s = %v online, %v by definition", seed, i, h[i].Time, names[f], got[f], want[i][f])
				}
			}
		}
	}
}

func sameFloat(a, b float32) bool { return a == b || (a != a && b != b) }

func TestStateWindowsByHand(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	st := NewState()
	at := func(minute float64, replays uint64, xids ...uint32) []float32 {
		s := Sample{Time: t0.Add(time.Duration(minute * float64(time.Minute))), CountersRead: 1 << CounterPCIeReplay, Xids: xids}
		s.Counters[CounterPCIeReplay] = replays
		for i := range s.Gauges {
			s.Gauges[i] = NaN
		}
		return st.Update(&s)
	}
	idx := func(name string) int {
		for i, n := range FeatureNames() {
			if n == name {
				return i
			}
		}
		t.Fatalf("no feature %s", name)
		return -1
	}
	at(0, 100)           // first read: no increment
	at(1, 103)           // +3 at minute 1
	f := at(20, 110, 13) // +7 and an Xid 13 at minute 20
	for name, want := range map[string]float32{
		"pcie_replay_5m": 7, "pcie_replay_30m": 10, "pcie_replay_2h": 10, "pcie_replay_active_30m": 2,
		"pcie_replay_since_min": 0, "pcie_replay_run_min": 19, "xid_app_5m": 1, "xid_gsp_since_min": 1440,
	} {
		if got := f[idx(name)]; got != want {
			t.Errorf("at minute 20: %s = %v, want %v", name, got, want)
		}
	}
	f = at(55, 110) // nothing new; minute 1 is 54 min back, minute 20 is 35 min back
	for name, want := range map[string]float32{
		"pcie_replay_30m": 0, "pcie_replay_prev_30m": 10, "pcie_replay_since_min": 35, "pcie_replay_run_min": 0,
		"temperature_c": NaN,
	} {
		if got := f[idx(name)]; !sameFloat(got, want) {
			t.Errorf("at minute 55: %s = %v, want %v", name, got, want)
		}
	}
}
