package fleetsim

import (
	"math"

	"github.com/gpuheal/gpuheal/internal/predict"
)

// The simulated GPU: an H100 SXM (700 W, 1,980 MHz, PCIe gen 5 x16, 18
// NVLinks) on an NVSwitch board.
const (
	powerLimit    = 700
	maxClock      = 1980
	idleClock     = 345
	nvlinks       = 18
	swThermalAt   = 85 // °C: SW thermal slowdown
	hwThermalAt   = 89 // °C: HW thermal slowdown
	clockSWPower  = 0x4
	clockIdle     = 0x1
	clockSWTherm  = 0x20
	clockHWTherm  = 0x40
	powerCapShare = 0.93
)

// board is one physical GPU in a slot: its counters, its thermals and the
// job running on it.
type board struct {
	ambient, heatPerWatt, memOffset float64
	idleDowntrain                   bool // the driver lowers the link generation when idle
	temp                            float64
	counters                        [predict.NumCounters]uint64
	pending, remapFailed            bool
	nvlinkUp                        uint8
	widthLoss, genLoss              bool
	recovery                        uint8

	busy                             bool
	phaseEnd, restartUntil           int64
	utilTarget, powerTarget, memUsed float64
}

// newBoard draws a board. The first board of a slot has a past (lifetime
// ECC counts, a few remapped rows); a replacement is new.
func newBoard(r rng, at int64, used bool) *board {
	b := &board{ambient: r.uniform(24, 32), heatPerWatt: r.uniform(0.045, 0.06), memOffset: r.uniform(2, 8),
		idleDowntrain: r.chance(0.5), nvlinkUp: nvlinks, phaseEnd: at}
	b.temp = b.ambient + 10
	if used {
		if r.chance(0.3) {
			b.counters[predict.CounterECCAggregateCorrected] = uint64(r.logUniform(1, 10000))
		}
		if r.chance(0.1) {
			b.counters[predict.CounterRemappedCorrectable] = uint64(1 + r.IntN(3))
		}
	}
	return b
}

// workload moves the job on: busy phases of hours, idle gaps of minutes.
func (b *board) workload(r rng, step int64) {
	if step < b.phaseEnd {
		return
	}
	b.busy = !b.busy
	if b.busy {
		b.phaseEnd = step + max(1, stepsOf(r.logNormal(6*60, 1)))
		b.utilTarget, b.powerTarget, b.memUsed = r.uniform(88, 100), powerLimit*r.uniform(0.75, 0.95), r.uniform(50000, 78000)
	} else {
		b.phaseEnd = step + max(1, stepsOf(r.logNormal(40, 1)))
		b.utilTarget, b.powerTarget, b.memUsed = 0, r.uniform(60, 90), 450
	}
}

// gauges fills the sample's gauges, clocks and link state.
func (b *board) gauges(r rng, step int64, tempOffset float64, s *predict.Sample) {
	running := b.busy && step >= b.restartUntil
	util, power := 0.0, b.powerTarget
	if running {
		util = b.utilTarget
		if r.chance(0.1) {
			util -= r.uniform(5, 40)
		}
		power = b.powerTarget*(0.85+0.15*util/100) + 8*r.NormFloat64()
	} else if b.busy { // restarting after a crash
		power = 120 + 5*r.NormFloat64()
	} else {
		power += 2 * r.NormFloat64()
	}
	power = math.Round(min(max(power, 50), powerLimit))
	target := b.ambient + b.heatPerWatt*power + tempOffset
	b.temp += 0.15*(target-b.temp) + 0.3*r.NormFloat64()
	temp := math.Round(b.temp)

	clock, reasons := float64(maxClock), uint64(0)
	switch {
	case !b.busy:
		clock, reasons = idleClock, clockIdle
	case power > powerCapShare*powerLimit:
		clock, reasons = 1830, clockSWPower
	}
	if temp >= swThermalAt {
		clock, reasons = min(clock, 1600), reasons|clockSWTherm
	}
	if temp >= hwThermalAt {
		clock, reasons = min(clock, 1200), reasons|clockHWTherm
	}
	mem := b.memUsed
	if b.busy && !running {
		mem = 450
	}
	s.Gauges = [predict.NumGauges]float32{float32(math.Round(util)), float32(math.Round(mem)), float32(temp),
		float32(math.Round(b.temp + b.memOffset)), float32(power), float32(clock)}
	s.ClockEventReasons = reasons
	s.PCIeLinkGen, s.PCIeLinkGenMax, s.PCIeLinkWidth, s.PCIeLinkWidthMax = 5, 5, 16, 16
	if !b.busy && b.idleDowntrain {
		s.PCIeLinkGen = 1
	}
	if b.genLoss {
		s.PCIeLinkGen = min(s.PCIeLinkGen, 4)
	}
	if b.widthLoss {
		s.PCIeLinkWidth = 8
	}
	s.NVLinkUp, s.NVLinkTotal = b.nvlinkUp, nvlinks
	s.RemappedRowsPending, s.RemappedRowsFailure = b.pending, b.remapFailed
	s.RecoveryAction = b.recovery
}

// count draws the step's counter increments.
func (b *board) count(r rng, fx *effects, xids []uint32) []uint32 {
	c := &b.counters
	if n := r.poisson(fx.sbe); n > 0 {
		c[predict.CounterECCCorrected] += n
		c[predict.CounterECCAggregateCorrected] += n
		// The driver reports a high corrected-error rate as Xid 92.
		if n >= 20 && r.chance(0.3) {
			xids = append(xids, 92)
		}
	}
	c[predict.CounterPCIeReplay] += r.poisson(fx.replay)
	c[predict.CounterNVLinkCRCFlit] += r.poisson(fx.crc * 0.75)
	c[predict.CounterNVLinkCRCData] += r.poisson(fx.crc * 0.25)
	c[predict.CounterNVLinkReplay] += r.poisson(fx.retry)
	c[predict.CounterNVLinkRecovery] += r.poisson(fx.retry * 0.02)
	return xids
}

// point applies a one-off event.
func (b *board) point(r rng, step int64, p point, xids []uint32) []uint32 {
	c := &b.counters
	switch p.do {
	case pointRemap, pointRemapUnc:
		if p.do == pointRemap {
			c[predict.CounterRemappedCorrectable]++
		} else {
			c[predict.CounterRemappedUncorrectable]++
		}
		b.pending = true
		xids = append(xids, 63)
	case pointXid119:
		for range p.n {
			xids = append(xids, 119)
		}
	case pointXid94:
		c[predict.CounterECCUncorrected]++
		c[predict.CounterECCAggregateUncorrected]++
		xids = append(xids, 94)
	case pointAppCrash:
		if r.chance(0.7) {
			for range p.n {
				xids = append(xids, 13)
			}
		} else {
			xids = append(xids, 31)
		}
		if r.chance(0.5) {
			xids = append(xids, 43)
		}
		if b.busy {
			b.restartUntil = step + 2 + r.Int64N(5)
		}
	case pointLinkDegrade:
		if r.chance(0.5) {
			b.widthLoss = true
		} else {
			b.genLoss = true
		}
	case pointReset:
		b.pending = false
		c[predict.CounterECCCorrected], c[predict.CounterECCUncorrected] = 0, 0
	}
	return xids
}

// fail applies a failure's fatal signal and says whether the GPU stops
// answering.
func (b *board) fail(r rng, c Class, xids []uint32) ([]uint32, bool) {
	cnt := &b.counters
	switch c {
	case ClassDBE:
		n := 1 + r.poisson(0.5)
		cnt[predict.CounterECCUncorrected] += n
		cnt[predict.CounterECCAggregateUncorrected] += n
		xids = append(xids, 48)
		if r.chance(0.3) {
			xids = append(xids, 95)
		}
		b.recovery = 1
		return xids, false
	case ClassRemap:
		b.remapFailed = true
		cnt[predict.CounterECCUncorrected]++
		cnt[predict.CounterECCAggregateUncorrected]++
		xids = append(xids, 64)
		if r.chance(0.5) {
			xids = append(xids, 48)
		}
		b.recovery = 1
		return xids, false
	case ClassGSP:
		xids = append(xids, 119, 119)
		if r.chance(0.5) {
			xids = append(xids, 120)
		}
		return xids, true
	case ClassBus:
		return append(xids, 79), true
	case ClassNVLink:
		b.nvlinkUp--
		return append(xids, 74), false
	default: // thermal shutdown
		if r.chance(0.5) {
			xids = append(xids, 79)
		}
		return xids, true
	}
}
