package predict

import "math"

// absorb adds a sample's readings to the current slot.
func (s *State) absorb(x *Sample) {
	for c := range NumCounters {
		if x.CountersRead&(1<<c) == 0 {
			continue
		}
		v := x.Counters[c]
		var inc uint64
		if s.prevRead&(1<<c) != 0 {
			inc = v // the counter went down: it restarted from zero
			if v >= s.prev[c] {
				inc = v - s.prev[c]
			}
		}
		s.prev[c], s.prevRead = v, s.prevRead|1<<c
		if g := counterSignal[c]; g >= 0 && inc > 0 {
			s.add(g, inc)
		}
	}
	for _, code := range x.Xids {
		s.add(xidSignal(code), 1)
	}
	s.temp.set(s.head, x.Gauges[GaugeTemperatureC])
	s.util.set(s.head, x.Gauges[GaugeUtilizationPercent])

	var f uint8
	if x.ClockEventReasons&clockSWThermal != 0 {
		f |= 1
	}
	if x.ClockEventReasons&clockHWThermal != 0 {
		f |= 2
	}
	for b := range s.hot {
		if f&(1<<b) != 0 && s.flags[s.head]&(1<<b) == 0 {
			s.hot[b]++
		}
	}
	s.flags[s.head] |= f

	s.readState(x)
}

// add counts n events of signal g in the current slot.
func (s *State) add(g int, n uint64) {
	old := s.sig[g][s.head]
	nv := int32(min(uint64(old)+n, math.MaxInt32))
	for w := range windows {
		s.sigSum[g][w] += int64(nv) - int64(old)
	}
	if old == 0 {
		s.active[g]++
	}
	s.sig[g][s.head] = nv
	if s.last[g] == neverSlot || s.slot-s.last[g] > runGapSlots {
		s.run[g] = s.slot
	}
	s.last[g] = s.slot
}

// readState keeps the latest link, remap and recovery readings.
func (s *State) readState(x *Sample) {
	s.widthLoss, s.genLossBusy = 0, 0
	if x.PCIeLinkWidth > 0 && x.PCIeLinkWidth < x.PCIeLinkWidthMax {
		s.widthLoss = float32(x.PCIeLinkWidthMax - x.PCIeLinkWidth)
	}
	// Drivers lower the link generation of an idle GPU to save power.
	if x.PCIeLinkGen > 0 && x.PCIeLinkGen < x.PCIeLinkGenMax && x.ClockEventReasons&clockGPUIdle == 0 {
		s.genLossBusy = float32(x.PCIeLinkGenMax - x.PCIeLinkGen)
	}
	s.nvlinkDown = 0
	if x.NVLinkUp < x.NVLinkTotal {
		s.nvlinkDown = float32(x.NVLinkTotal - x.NVLinkUp)
	}
	s.remapPending = 0
	if x.RemappedRowsPending {
		s.remapPending = 1
	}
	const rows = 1<<CounterRemappedCorrectable | 1<<CounterRemappedUncorrectable
	if x.CountersRead&rows != 0 {
		s.remappedRows = float32(x.Counters[CounterRemappedCorrectable] + x.Counters[CounterRemappedUncorrectable])
	}
	s.recovery = float32(x.RecoveryAction)
}

// features writes the feature vector of the current state into s.out.
func (s *State) features() {
	for g := range numSignals {
		o := s.out[g*len(signalFeatures):]
		sums := &s.sigSum[g]
		o[sf5m], o[sf30m], o[sfPrev30m], o[sf2h] = float32(sums[0]), float32(sums[1]), float32(sums[2]-sums[1]), float32(sums[3])
		o[sfActive30m] = float32(s.active[g])
		o[sfSince] = sinceMinutes(s.slot, s.last[g])
		o[sfRun] = runMinutes(s.slot, s.last[g], s.run[g])
	}
	o := s.out[:]
	o[featTemperature], o[featTemperatureRise2h], o[featTemperatureRise30m] = NaN, NaN, NaN
	if s.temp.known {
		cur := meanTenths(int64(s.temp.vals[s.head]), 1)
		m5 := meanTenths(s.temp.sums[0], win5m)
		var band int64
		for i := win30m - win5m; i < win30m; i++ {
			band += int64(s.temp.vals[(s.head-i+ringLen)%ringLen])
		}
		o[featTemperature] = cur
		o[featTemperatureRise2h] = m5 - meanTenths(s.temp.sums[3], win2h)
		o[featTemperatureRise30m] = m5 - meanTenths(band, win5m)
	}
	o[featUtilizationMean30m] = NaN
	if s.util.known {
		o[featUtilizationMean30m] = meanTenths(s.util.sums[1], win30m)
	}
	o[featSWThermal30m], o[featHWThermal30m] = float32(s.hot[0]), float32(s.hot[1])
	o[featPCIeWidthLoss], o[featPCIeGenLossBusy] = s.widthLoss, s.genLossBusy
	o[featNVLinkDown], o[featRemapPending], o[featRemappedRows] = s.nvlinkDown, s.remapPending, s.remappedRows
	o[featRecoveryAction] = s.recovery
}

func meanTenths(sum int64, n int) float32 {
	return float32(float64(sum) / float64(n) / 10)
}

// runMinutes is how long the current run of events has lasted, 0 when
// the last event is more than the run gap ago.
func runMinutes(now, last, run int64) float32 {
	if last == neverSlot || now-last > runGapSlots {
		return 0
	}
	return float32(float64(now-run) * Interval.Minutes())
}

func sinceMinutes(now, last int64) float32 {
	if last == neverSlot {
		return sinceCapMinutes
	}
	m := float64(now-last) * Interval.Minutes()
	return float32(min(m, sinceCapMinutes))
}
