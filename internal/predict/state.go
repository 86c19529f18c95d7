package predict

import "math"

// State is the online feature state of one GPU. Update takes each sample
// once, in time order, and returns the features as of that sample. It
// keeps two hours of 30 s slots (about 15 KiB) and does no allocation per
// sample. A State is not safe for concurrent use; the agent keeps one per
// GPU and starts a new one when the GPU's UUID changes (a replaced board).
type State struct {
	started bool
	slot    int64 // current slot number
	head    int   // ring index of the current slot

	prev     [NumCounters]uint64
	prevRead uint16

	sig    [numSignals][ringLen]int32
	sigSum [numSignals][len(windows)]int64
	active [numSignals]int32 // slots with events in the 30 min window
	last   [numSignals]int64 // slot of the last event
	run    [numSignals]int64 // slot the current run of events began

	temp, util gaugeRing
	flags      [ringLen]uint8 // bit 0: SW thermal, bit 1: HW thermal
	hot        [2]int32       // slots with each flag in the 30 min window

	widthLoss, genLossBusy, nvlinkDown   float32
	remapPending, remappedRows, recovery float32

	out [NumFeatures]float32
}

// gaugeRing holds one gauge per slot in tenths, carried forward through
// slots without a reading, with running sums over the windows.
type gaugeRing struct {
	known bool
	vals  [ringLen]int32
	sums  [len(windows)]int64
}

const neverSlot = math.MinInt64

// NewState returns the state of a GPU with no history.
func NewState() *State {
	s := &State{}
	for i := range s.last {
		s.last[i] = neverSlot
	}
	return s
}

// Update absorbs one sample and returns the feature vector (NumFeatures
// long, in FeatureNames order). The slice is the State's own and is
// overwritten by the next Update: copy it to keep it. A sample older than
// the current slot counts in the current slot.
func (s *State) Update(x *Sample) []float32 {
	slot := slotOf(x.Time)
	switch {
	case !s.started:
		s.started, s.slot = true, slot
	case slot > s.slot:
		s.advance(slot - s.slot)
		s.slot = slot
	}
	if !x.Missing {
		s.absorb(x)
	}
	s.features()
	return s.out[:]
}

// advance moves the current slot k slots on. A gap longer than the ring
// empties every window; gauges carry their last reading.
func (s *State) advance(k int64) {
	if k >= ringLen {
		s.clearWindows()
		return
	}
	for range k {
		s.advanceOne()
	}
}

func (s *State) advanceOne() {
	prev := s.head
	s.head = (s.head + 1) % ringLen
	back := func(n int) int { return (s.head - n + ringLen) % ringLen }
	for g := range s.sig {
		r := &s.sig[g]
		for w, n := range windows {
			s.sigSum[g][w] -= int64(r[back(n)])
		}
		if r[back(win30m)] != 0 {
			s.active[g]--
		}
		r[s.head] = 0
	}
	for _, gr := range []*gaugeRing{&s.temp, &s.util} {
		carry := gr.vals[prev]
		for w, n := range windows {
			gr.sums[w] += int64(carry) - int64(gr.vals[back(n)])
		}
		gr.vals[s.head] = carry
	}
	leaving := s.flags[back(win30m)]
	for b := range s.hot {
		if leaving&(1<<b) != 0 {
			s.hot[b]--
		}
	}
	s.flags[s.head] = 0
}

func (s *State) clearWindows() {
	s.sig, s.sigSum, s.active = [numSignals][ringLen]int32{}, [numSignals][len(windows)]int64{}, [numSignals]int32{}
	s.flags, s.hot = [ringLen]uint8{}, [2]int32{}
	for _, gr := range []*gaugeRing{&s.temp, &s.util} {
		if gr.known {
			gr.fill(gr.vals[s.head])
		}
	}
}

func (gr *gaugeRing) fill(v int32) {
	gr.known = true
	for i := range gr.vals {
		gr.vals[i] = v
	}
	for w, n := range windows {
		gr.sums[w] = int64(v) * int64(n)
	}
}

// set replaces the current slot's reading; before the first reading the
// whole ring takes it, so early windows are not diluted by zeros.
func (gr *gaugeRing) set(head int, v float32) {
	if v != v { // NaN: not reported, keep the carried value
		return
	}
	t := int32(math.Round(float64(v) * 10))
	if !gr.known {
		gr.fill(t)
		return
	}
	for w := range windows {
		gr.sums[w] += int64(t) - int64(gr.vals[head])
	}
	gr.vals[head] = t
}
