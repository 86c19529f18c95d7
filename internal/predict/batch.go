package predict

import "math"

// BatchFeatures computes, for every sample of one GPU's history, the
// feature vector State.Update would return after it. It restates the
// definitions literally — scan the slots of each window, look back for the
// last reading — instead of keeping running sums, and is slow: it exists
// so that tests can hold State to the definitions, not for production.
//
// Definitions: time is cut into Interval slots aligned to the Unix epoch;
// a sample earlier than the latest slot seen counts in that slot. A
// window of N slots ends at (and includes) the current slot. A counter
// increment is cur−prev between two reads of the counter (cur when the
// counter went down; nothing at its first read). A gauge slot holds the
// slot's last reading, else the previous slot's value; slots before the
// first reading take the first reading. A Missing sample only moves time.
// State readings (links, remaps, recovery action) are the last sample's
// that was not Missing.
func BatchFeatures(samples []Sample) [][]float32 {
	var (
		b   batch
		out [][]float32
	)
	for i := range samples {
		b.add(&samples[i])
		out = append(out, b.features())
	}
	return out
}

type batchSlot struct {
	sig        [numSignals]int64
	temp, util *int32
	flags      uint8
}

type batch struct {
	base, cur            int64 // slot numbers of slots[0] and of the current slot
	slots                []batchSlot
	prev                 [NumCounters]uint64
	prevRead             uint16
	firstTemp, firstUtil *int32
	last                 *Sample // last sample not Missing
	remappedRows         float32
}

func (b *batch) add(x *Sample) {
	n := slotOf(x.Time)
	if b.slots == nil {
		b.base, b.cur = n, n
		b.slots = []batchSlot{{}}
	}
	for ; b.cur < n; b.cur++ {
		b.slots = append(b.slots, batchSlot{})
	}
	if x.Missing {
		return
	}
	d := &b.slots[b.cur-b.base]
	for c := range NumCounters {
		if x.CountersRead&(1<<c) == 0 {
			continue
		}
		var inc uint64
		if b.prevRead&(1<<c) != 0 {
			inc = x.Counters[c]
			if x.Counters[c] >= b.prev[c] {
				inc = x.Counters[c] - b.prev[c]
			}
		}
		b.prev[c], b.prevRead = x.Counters[c], b.prevRead|1<<c
		if g := counterSignal[c]; g >= 0 {
			d.sig[g] += int64(inc)
		}
	}
	for _, code := range x.Xids {
		d.sig[xidSignal(code)]++
	}
	if v := x.Gauges[GaugeTemperatureC]; v == v {
		t := int32(math.Round(float64(v) * 10))
		d.temp = &t
		if b.firstTemp == nil {
			b.firstTemp = &t
		}
	}
	if v := x.Gauges[GaugeUtilizationPercent]; v == v {
		u := int32(math.Round(float64(v) * 10))
		d.util = &u
		if b.firstUtil == nil {
			b.firstUtil = &u
		}
	}
	if x.ClockEventReasons&clockSWThermal != 0 {
		d.flags |= 1
	}
	if x.ClockEventReasons&clockHWThermal != 0 {
		d.flags |= 2
	}
	if x.CountersRead&(1<<CounterRemappedCorrectable|1<<CounterRemappedUncorrectable) != 0 {
		b.remappedRows = float32(x.Counters[CounterRemappedCorrectable] + x.Counters[CounterRemappedUncorrectable])
	}
	b.last = x
}

// slot returns slot k, or nil before the first slot.
func (b *batch) slot(k int64) *batchSlot {
	if k < b.base {
		return nil
	}
	return &b.slots[k-b.base]
}

// gauge is a slot's value: its own reading, else the nearest earlier
// slot's, else the first reading.
func (b *batch) gauge(k int64, pick func(*batchSlot) *int32, first *int32) int64 {
	for m := k; m >= b.base; m-- {
		if v := pick(b.slot(m)); v != nil {
			return int64(*v)
		}
	}
	return int64(*first)
}

// sum adds f over the n slots ending at the current one.
func (b *batch) sum(n int, f func(k int64) int64) int64 {
	var t int64
	for k := b.cur - int64(n) + 1; k <= b.cur; k++ {
		t += f(k)
	}
	return t
}

func (b *batch) features() []float32 {
	f := make([]float32, NumFeatures)
	for g := range numSignals {
		count := func(k int64) int64 {
			if d := b.slot(k); d != nil {
				return min(d.sig[g], math.MaxInt32)
			}
			return 0
		}
		o := f[g*len(signalFeatures):]
		o[sf5m], o[sf30m], o[sf2h] = float32(b.sum(win5m, count)), float32(b.sum(win30m, count)), float32(b.sum(win2h, count))
		o[sfPrev30m] = float32(b.sum(win1h, count) - b.sum(win30m, count))
		o[sfActive30m] = float32(b.sum(win30m, func(k int64) int64 { return min(count(k), 1) }))
		// The last event, and the first of its run: walk back over events
		// until a gap longer than the run gap.
		last, run := int64(neverSlot), int64(neverSlot)
		for k := b.cur; k >= b.base; k-- {
			if count(k) == 0 {
				continue
			}
			if last == neverSlot {
				last = k
			} else if run-k > runGapSlots {
				break
			}
			run = k
		}
		o[sfSince] = sinceMinutes(b.cur, last)
		o[sfRun] = runMinutes(b.cur, last, run)
	}
	f[featTemperature], f[featTemperatureRise2h], f[featTemperatureRise30m] = NaN, NaN, NaN
	if b.firstTemp != nil {
		temp := func(k int64) int64 { return b.gauge(k, func(d *batchSlot) *int32 { return d.temp }, b.firstTemp) }
		m5 := meanTenths(b.sum(win5m, temp), win5m)
		var band int64
		for k := b.cur - win30m + 1; k <= b.cur-win30m+win5m; k++ {
			band += temp(k)
		}
		f[featTemperature] = meanTenths(temp(b.cur), 1)
		f[featTemperatureRise2h] = m5 - meanTenths(b.sum(win2h, temp), win2h)
		f[featTemperatureRise30m] = m5 - meanTenths(band, win5m)
	}
	f[featUtilizationMean30m] = NaN
	if b.firstUtil != nil {
		util := func(k int64) int64 { return b.gauge(k, func(d *batchSlot) *int32 { return d.util }, b.firstUtil) }
		f[featUtilizationMean30m] = meanTenths(b.sum(win30m, util), win30m)
	}
	for bit := range 2 {
		f[featSWThermal30m+bit] = float32(b.sum(win30m, func(k int64) int64 {
			if d := b.slot(k); d != nil && d.flags&(1<<bit) != 0 {
				return 1
			}
			return 0
		}))
	}
	f[featRemappedRows] = b.remappedRows
	if x := b.last; x != nil {
		if x.PCIeLinkWidth > 0 && x.PCIeLinkWidth < x.PCIeLinkWidthMax {
			f[featPCIeWidthLoss] = float32(x.PCIeLinkWidthMax - x.PCIeLinkWidth)
		}
		if x.PCIeLinkGen > 0 && x.PCIeLinkGen < x.PCIeLinkGenMax && x.ClockEventReasons&clockGPUIdle == 0 {
			f[featPCIeGenLossBusy] = float32(x.PCIeLinkGenMax - x.PCIeLinkGen)
		}
		if x.NVLinkUp < x.NVLinkTotal {
			f[featNVLinkDown] = float32(x.NVLinkTotal - x.NVLinkUp)
		}
		if x.RemappedRowsPending {
			f[featRemapPending] = 1
		}
		f[featRecoveryAction] = float32(x.RecoveryAction)
	}
	return f
}
