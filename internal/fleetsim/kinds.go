package fleetsim

import (
	"math"
	"slices"
)

// The constructors below draw each episode's parameters. Rates are
// expected counts per 30 s step. Precursor and benign ranges overlap on
// purpose: a benign burst can be as strong as a precursor's end.

// ramp draws a bursty, growing (or, for benign bursts, any) intensity.
func ramp(r rng, k kind, start, end int64, r0, r1 float64) *episode {
	return &episode{kind: k, start: start, end: end, r0: r0, r1: r1, gamma: r.uniform(0.5, 2),
		duty0: r.uniform(0.1, 0.5), duty1: r.uniform(0.5, 1), meanOn: r.uniform(2, 10)}
}

// late draws n steps in [start, end), denser towards the end (density
// rising linearly), sorted.
func late(r rng, n int, start, end int64) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = start + int64(math.Sqrt(r.Float64())*float64(end-start))
	}
	slices.Sort(out)
	return out
}

func newPrecursor(r rng, c Class, start, end int64) *episode {
	switch c {
	case ClassDBE:
		e := ramp(r, precDBE, start, end, r.logUniform(0.02, 0.5), r.logUniform(0.5, 20))
		if r.chance(0.4) {
			for _, s := range late(r, 1+r.IntN(2), start, end) {
				e.points = append(e.points, point{step: s, do: pointRemap})
			}
		}
		if r.chance(0.15) {
			e.points = append(e.points, point{step: start + int64(r.uniform(0.7, 1)*float64(end-start)), do: pointXid94})
		}
		slices.SortFunc(e.points, func(a, b point) int { return int(a.step - b.step) })
		return e
	case ClassRemap:
		e := ramp(r, precRemap, start, end, r.logUniform(0.05, 0.5), r.logUniform(0.3, 3))
		for _, s := range late(r, 3+int(r.poisson(4)), start, end) {
			do := pointRemap
			if r.chance(0.3) {
				do = pointRemapUnc
			}
			e.points = append(e.points, point{step: s, do: do})
		}
		return e
	case ClassGSP:
		e := &episode{kind: precGSP, start: start, end: end}
		for _, s := range late(r, 1+int(r.poisson(3)), start, end) {
			e.points = append(e.points, point{step: s, do: pointXid119, n: 1 + r.IntN(3)})
		}
		return e
	case ClassBus:
		e := ramp(r, precBus, start, end, r.logUniform(0.3, 3), r.logUniform(6, 150))
		if r.chance(0.35) {
			e.points = append(e.points, point{step: start + int64(r.uniform(0.3, 0.9)*float64(end-start)), do: pointLinkDegrade})
		}
		return e
	case ClassNVLink:
		return ramp(r, precNVLink, start, end, r.logUniform(0.3, 6), r.logUniform(15, 600))
	default: // ClassThermal: cooling degrades, the temperature creeps up
		return &episode{kind: precThermal, start: start, end: end, tempDelta: r.uniform(15, 30), gamma: r.uniform(0.7, 2)}
	}
}

func duration(r rng, medianMinutes, sigma, maxHours float64) int64 {
	return min(max(stepsOf(r.logNormal(medianMinutes, sigma)), stepsOf(2)), int64(maxHours*stepsPerHour))
}

// newAppCrashes is a job that crashes and restarts a few times: Xid 13
// (many per crash, one per faulting SM) or Xid 31, often Xid 43 after.
func newAppCrashes(r rng, start int64) *episode {
	e := &episode{kind: benignAppCrashes, start: start}
	at := start
	for i := range 1 + int(r.poisson(r.logUniform(0.5, 8))) {
		if i > 0 {
			at += stepsOf(r.logUniform(3, 20))
		}
		e.points = append(e.points, point{step: at, do: pointAppCrash, n: 1 + r.IntN(8)})
	}
	e.end = at + 1
	return e
}

func newSBEBurst(r rng, start int64) *episode {
	e := ramp(r, benignSBE, start, start+duration(r, 30, 1, 12), r.logUniform(0.05, 10), r.logUniform(0.05, 10))
	e.duty0 = r.uniform(0.2, 1)
	if r.chance(0.1) {
		// A row remapped during the burst stays pending until a reset.
		at := start + (e.end-start)/2
		reset := at + max(1, duration(r, 12*60, 0.8, 96))
		e.points = append(e.points, point{step: at, do: pointRemap}, point{step: reset, do: pointReset})
		e.rateEnd, e.end = e.end, reset+1
	}
	return e
}

// newBenignRemap is one row remapped on a healthy GPU; the pending remap
// clears at the next GPU reset (maintenance), about half a day later.
func newBenignRemap(r rng, start int64) *episode {
	reset := start + max(1, duration(r, 12*60, 0.8, 96))
	return &episode{kind: benignRemap, start: start, end: reset + 1,
		points: []point{{step: start, do: pointRemap}, {step: reset, do: pointReset}}}
}

func newReplayBurst(r rng, start int64) *episode {
	return ramp(r, benignReplay, start, start+duration(r, 20, 1, 12), r.logUniform(1, 150), r.logUniform(1, 150))
}

func newCRCBurst(r rng, start int64) *episode {
	return ramp(r, benignCRC, start, start+duration(r, 20, 1, 12), r.logUniform(1, 600), r.logUniform(1, 600))
}

func newThermalExcursion(r rng, start int64) *episode {
	return &episode{kind: benignThermal, start: start, end: start + duration(r, 45, 0.7, 12), tempDelta: r.uniform(5, 25)}
}

func newGSPTimeout(r rng, start int64) *episode {
	e := &episode{kind: benignGSP, start: start, points: []point{{step: start, do: pointXid119, n: 1 + r.IntN(2)}}}
	if r.chance(0.3) {
		e.points = append(e.points, point{step: start + stepsOf(r.uniform(2, 20)), do: pointXid119, n: 1})
	}
	e.end = e.points[len(e.points)-1].step + 1
	return e
}
