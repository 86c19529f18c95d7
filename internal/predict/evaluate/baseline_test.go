package evaluate

import (
	"testing"
	"time"

	"github.com/gpuheal/gpuheal/internal/predict"
	"github.com/gpuheal/gpuheal/internal/xid"
)

// sampleAt is a healthy H100 reading at minute m (30 s steps).
func sampleAt(m float64) predict.Sample {
	s := predict.Sample{Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(m * float64(time.Minute))),
		CountersRead: predict.AllCountersRead, PCIeLinkGen: 5, PCIeLinkGenMax: 5, PCIeLinkWidth: 16, PCIeLinkWidthMax: 16,
		NVLinkUp: 18, NVLinkTotal: 18}
	return s
}

func TestBaselineRules(t *testing.T) {
	type step struct {
		min  float64
		set  func(*predict.Sample)
		want int
	}
	replays := func(n uint64) func(*predict.Sample) {
		return func(s *predict.Sample) { s.Counters[predict.CounterPCIeReplay] = n }
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"pcie-replay-rate: 7 in 30 s is above 0.2/s; clears 10 min after", []step{
			{0, replays(0), levelNone}, {0.5, replays(7), levelWarning}, {10, replays(7), levelWarning}, {10.5, replays(7), levelNone},
		}},
		{"6 in 30 s is not above 0.2/s", []step{{0, replays(0), levelNone}, {0.5, replays(6), levelNone}}},
		{"nvlink-down holds for 1m before it fires", []step{
			{0, func(s *predict.Sample) { s.NVLinkUp = 17 }, levelNone},
			{0.5, func(s *predict.Sample) { s.NVLinkUp = 17 }, levelNone},
			{1, func(s *predict.Sample) { s.NVLinkUp = 17 }, levelFatal},
		}},
		{"pcie-degraded: a slow link when idle is not degraded", []step{
			{0, func(s *predict.Sample) { s.PCIeLinkGen, s.ClockEventReasons = 1, 0x1 }, levelNone},
			{6, func(s *predict.Sample) { s.PCIeLinkGen, s.ClockEventReasons = 1, 0x1 }, levelNone},
		}},
		{"Xid 13 is a warning for 10 min", []step{
			{0, func(s *predict.Sample) { s.Xids = []uint32{13, 13, 13} }, levelWarning},
			{9.5, nil, levelWarning}, {10, nil, levelNone},
		}},
		{"Xid 119 is fatal for 30 min, Xid 79 latches", []step{
			{0, func(s *predict.Sample) { s.Xids = []uint32{119} }, levelFatal},
			{30, nil, levelNone},
			{31, func(s *predict.Sample) { s.Xids = []uint32{79} }, levelFatal},
			{500, nil, levelFatal},
		}},
		{"a pending remap warns; a missing GPU is fatal", []step{
			{0, func(s *predict.Sample) { s.RemappedRowsPending = true }, levelWarning},
			{0.5, func(s *predict.Sample) { s.Missing = true }, levelFatal},
		}},
	} {
		b := newBaseline(xid.Default())
		for _, st := range tc.steps {
			s := sampleAt(st.min)
			if st.set != nil {
				st.set(&s)
			}
			if got := b.level(&s); got != st.want {
				t.Errorf("%s: minute %v: level %d, want %d", tc.name, st.min, got, st.want)
			}
		}
	}
}

func TestBaselineXid13Escalates(t *testing.T) {
	// The catalog escalates ten Xid 13 faults within an hour to fatal.
	b := newBaseline(xid.Default())
	for i := range 10 {
		s := sampleAt(float64(i) * 5)
		s.Xids = []uint32{13}
		got := b.level(&s)
		if want := map[bool]int{true: levelFatal, false: levelWarning}[i == 9]; got != want {
			t.Errorf("fault %d: level %d, want %d", i+1, got, want)
		}
	}
}
