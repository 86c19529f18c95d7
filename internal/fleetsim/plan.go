package fleetsim

import (
	"math"
	"slices"
	"time"
)

// Steps are sample intervals (30 s).
const stepsPerHour = 120

func steps(d time.Duration) int64 { return int64(math.Round(d.Hours() * stepsPerHour)) }

func stepsOf(minutes float64) int64 { return int64(math.Round(minutes * stepsPerHour / 60)) }

// plannedFailure is a failure of one GPU slot, drawn before any sample.
type plannedFailure struct {
	spec         ClassSpec
	step, repair int64 // failure step; first step with the new board
	precursor    *episode
}

// plan is everything that will happen to one GPU slot.
type plan struct {
	failures []plannedFailure
	episodes []*episode // by start
	// boards[i] starts at boardStarts[i]; a failure's repair starts the next.
	boardStarts []int64
}

// planGPU draws one slot's failures and episodes over total steps.
func planGPU(r rng, o *Options, gpu int, total int64) *plan {
	p := &plan{boardStarts: []int64{0}}
	perStep := o.failureRate() / 1000 / stepsPerHour
	at := 0.0
	for perStep > 0 {
		// The board in place since the last repair fails at its own rate.
		m, _ := o.BoardHazard(gpu, len(p.failures))
		at += r.exponential(perStep * m)
		f := int64(at)
		if f >= total {
			break
		}
		spec := pickClass(r, o.Preset.Classes)
		repair := f + max(stepsOf(30), steps(time.Duration(r.logNormal(float64(o.Preset.RepairMedian), 0.6))))
		pf := plannedFailure{spec: spec, step: f, repair: repair}
		if r.chance(spec.PrecursorProbability) {
			lead := steps(time.Duration(r.logNormal(float64(spec.LeadMedian), spec.LeadSigma)))
			lead = min(max(lead, stepsOf(2)), 24*stepsPerHour)
			start := max(f-lead, p.boardStarts[len(p.boardStarts)-1])
			if start < f {
				pf.precursor = newPrecursor(r, spec.Class, start, f)
				p.episodes = append(p.episodes, pf.precursor)
			}
		}
		p.failures = append(p.failures, pf)
		p.boardStarts = append(p.boardStarts, repair)
		at = float64(repair)
	}
	p.addBenign(r, o, total)
	for i, s := range p.boardStarts {
		end := total
		if i < len(p.failures) {
			end = p.failures[i].step
		}
		p.addChronic(r, o.Preset.Benign.scaled(o.Preset.BenignScale), s, end)
	}
	slices.SortStableFunc(p.episodes, func(a, b *episode) int { return int(a.start - b.start) })
	return p
}

func pickClass(r rng, classes []ClassSpec) ClassSpec {
	var total float64
	for _, c := range classes {
		total += c.Share
	}
	x := r.Float64() * total
	for _, c := range classes {
		if x -= c.Share; x < 0 {
			return c
		}
	}
	return classes[len(classes)-1]
}

// outOfService reports whether step falls between a failure and its repair.
func (p *plan) outOfService(step int64) bool {
	for _, f := range p.failures {
		if step >= f.step && step < f.repair {
			return true
		}
	}
	return false
}

func (p *plan) addBenign(r rng, o *Options, total int64) {
	b := o.Preset.Benign.scaled(o.Preset.BenignScale)
	days := float64(total) / (24 * stepsPerHour)
	for _, k := range []struct {
		rate float64
		make func(rng, int64) *episode
	}{
		{b.AppXidCrashLoops, newAppCrashes},
		{b.SBEBursts, newSBEBurst},
		{b.RowRemaps, newBenignRemap},
		{b.PCIeReplayBursts, newReplayBurst},
		{b.NVLinkCRCBursts, newCRCBurst},
		{b.ThermalExcursions, newThermalExcursion},
		{b.GSPTimeouts, newGSPTimeout},
	} {
		for range r.poisson(k.rate * days) {
			start := r.Int64N(total)
			e := k.make(r, start)
			if !p.outOfService(start) {
				p.episodes = append(p.episodes, e)
			}
		}
	}
}

func (p *plan) addChronic(r rng, b Benign, start, end int64) {
	for _, c := range []struct {
		share  float64
		kind   kind
		lo, hi float64 // rate per step
	}{
		{b.ChronicSBEShare, chronicSBE, 0.002, 0.05},
		{b.ChronicReplayShare, chronicReplay, 0.005, 0.2},
		{b.ChronicCRCShare, chronicCRC, 0.01, 1},
	} {
		if r.chance(c.share) {
			rate := r.logUniform(c.lo, c.hi)
			p.episodes = append(p.episodes, &episode{kind: c.kind, start: start, end: end, r0: rate, r1: rate, gamma: 1, duty0: 1, duty1: 1})
		}
	}
}
