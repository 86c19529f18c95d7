package fleetsim

import "math"

// kind is what an episode does to a GPU.
type kind int

const (
	// Precursors, one per failure class.
	precDBE kind = iota
	precRemap
	precGSP
	precBus
	precNVLink
	precThermal
	// Benign episodes: healthy GPUs that look like failing ones for a while.
	benignAppCrashes
	benignSBE
	benignRemap
	benignReplay
	benignCRC
	benignThermal
	benignGSP
	// Chronic conditions of a board, for its whole life.
	chronicSBE
	chronicReplay
	chronicCRC
)

var kindNames = map[kind]string{
	precDBE: "precursor-hbm-dbe", precRemap: "precursor-row-remap", precGSP: "precursor-gsp",
	precBus: "precursor-fell-off-bus", precNVLink: "precursor-nvlink", precThermal: "precursor-thermal",
	benignAppCrashes: "app-xid-crash-loop", benignSBE: "sbe-burst", benignRemap: "row-remap",
	benignReplay: "pcie-replay-burst", benignCRC: "nvlink-crc-burst", benignThermal: "thermal-excursion",
	benignGSP: "gsp-timeout", chronicSBE: "chronic-sbe", chronicReplay: "chronic-pcie-replay",
	chronicCRC: "chronic-nvlink-crc",
}

// point is a one-off event of an episode at a step.
type point struct {
	step int64
	do   pointKind
	n    int // Xids to emit, or rows
}

type pointKind int

const (
	pointRemap       pointKind = iota // a row remapped: Xid 63, pending
	pointRemapUnc                     // the same, counted uncorrectable
	pointXid119                       // n Xid 119
	pointXid94                        // a contained ECC error
	pointAppCrash                     // n Xid 13 (or one 31), maybe 43; the job restarts
	pointLinkDegrade                  // PCIe width or generation drops until the failure
	pointReset                        // a GPU reset at maintenance: pending cleared, volatile ECC zeroed
)

// episode is a stretch [start, end) of steps during which a GPU shows a
// signal. Rates grow from r0 to r1 along u = (step−start)/(end−start) as
// r0·(r1/r0)^(u^gamma), and are bursty: an on/off chain whose share of
// "on" goes from duty0 to duty1, with bursts meanOn steps long on
// average; "off" keeps 2 % of the rate.
type episode struct {
	kind       kind
	start, end int64
	// rateEnd, when set, ends the rates and ramps before end (an episode
	// whose last point comes later).
	rateEnd              int64
	r0, r1, gamma        float64
	duty0, duty1, meanOn float64
	on                   bool
	// tempDelta is a thermal episode's peak temperature offset (°C).
	tempDelta float64
	points    []point
	next      int // first point not yet done
}

// effects collects what the active episodes do in one step.
type effects struct {
	sbe, replay, crc, retry float64 // expected counts in the step
	tempOffset              float64
	points                  []point
}

func (e *episode) progress(step int64) float64 {
	return float64(step-e.start) / float64(max(1, e.rampEnd()-e.start))
}

func (e *episode) rampEnd() int64 {
	if e.rateEnd > 0 {
		return e.rateEnd
	}
	return e.end
}

// rate is the episode's expected count in this step, bursts included.
func (e *episode) rate(step int64, r rng) float64 {
	if e.r0 == 0 || step >= e.rampEnd() {
		return 0
	}
	u := e.progress(step)
	level := e.r0 * math.Pow(e.r1/e.r0, math.Pow(u, e.gamma))
	duty := e.duty0 + (e.duty1-e.duty0)*u
	if duty >= 0.999 {
		return level
	}
	off := 1 / e.meanOn
	if e.on {
		e.on = !r.chance(off)
	} else {
		e.on = r.chance(min(1, off*duty/(1-duty)))
	}
	if e.on {
		return level
	}
	return level * 0.02
}

// apply adds the episode's effect at step to fx.
func (e *episode) apply(step int64, r rng, fx *effects) {
	switch e.kind {
	case precDBE, precRemap, benignSBE, chronicSBE:
		fx.sbe += e.rate(step, r)
	case precBus, benignReplay, chronicReplay:
		fx.replay += e.rate(step, r)
	case precNVLink, benignCRC, chronicCRC:
		c := e.rate(step, r)
		fx.crc += c
		fx.retry += c * 0.5
	case precThermal:
		fx.tempOffset += e.tempDelta * math.Pow(e.progress(step), e.gamma)
	case benignThermal:
		fx.tempOffset += e.tempDelta * math.Sin(math.Pi*e.progress(step))
	}
	for e.next < len(e.points) && e.points[e.next].step <= step {
		fx.points = append(fx.points, e.points[e.next])
		e.next++
	}
}
