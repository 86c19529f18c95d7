package fleetsim

import (
	"math"
	"testing"
)

// planFleet plans every GPU slot of o (no samples), and sums failures and
// exposure (steps in service) on lemon and normal boards.
type tally struct{ lemonFailures, normalFailures, lemonSteps, normalSteps, failures, steps float64 }

func planFleet(t *testing.T, o Options) tally {
	t.Helper()
	if err := o.complete(); err != nil {
		t.Fatal(err)
	}
	total := int64(o.Days * 24 * stepsPerHour)
	var s tally
	for gpu := range o.GPUs {
		p := planGPU(newRNG(o.Seed, gpu), &o, gpu, total)
		for b, start := range p.boardStarts {
			end, failed := total, 0.0
			if b < len(p.failures) {
				end, failed = p.failures[b].step, 1
			}
			exposure := float64(max(end-start, 0))
			s.failures += failed
			s.steps += exposure
			if _, lemon := o.BoardHazard(gpu, b); lemon {
				s.lemonFailures += failed
				s.lemonSteps += exposure
			} else {
				s.normalFailures += failed
				s.normalSteps += exposure
			}
		}
	}
	return s
}

// Over a large fleet, lemons' share of the failures is what LemonShare and
// LemonMultiple say, given each kind's time in service (conditioned on the
// total, the lemons' count is binomial with q = L·E_lemon / (L·E_lemon +
// E_normal)); the lemons are LemonShare of the boards; and a lemon-free
// fleet fails at the preset's rate.
func TestLemonsShareOfFailures(t *testing.T) {
	o := Options{GPUs: 20000, Days: 10, Seed: 11, FailureRate: 0.15, Hazard: Hazard{LemonShare: 0.05, LemonMultiple: 8}}
	if err := o.complete(); err != nil {
		t.Fatal(err)
	}
	s := planFleet(t, o)
	n := s.lemonFailures + s.normalFailures
	t.Logf("%.0f failures, %.0f on lemons; lemon exposure share %.3f", n, s.lemonFailures, s.lemonSteps/(s.lemonSteps+s.normalSteps))
	q := 8 * s.lemonSteps / (8*s.lemonSteps + s.normalSteps)
	if sd := math.Sqrt(n * q * (1 - q)); math.Abs(s.lemonFailures-n*q) > 4*sd {
		t.Errorf("lemons had %.0f of %.0f failures, want %.0f ± %.0f", s.lemonFailures, n, n*q, 4*sd)
	}
	// At this rate a lemon's first board fails within the 10 days one time
	// in five, so the time in service barely differs and the share is
	// close to the parameters' 0.05·8 / (0.95 + 0.05·8) = 0.30 (about 700
	// failures: ± 0.07 at 4 σ).
	if share := s.lemonFailures / n; share < 0.21 || share > 0.37 {
		t.Errorf("lemons' share of failures %.3f, want about 0.30", share)
	}
	var lemons float64
	for gpu := range o.GPUs {
		if _, lemon := o.BoardHazard(gpu, 0); lemon {
			lemons++
		}
	}
	if sd := math.Sqrt(20000 * 0.05 * 0.95); math.Abs(lemons-1000) > 4*sd {
		t.Errorf("%.0f lemons among 20000 first boards, want 1000 ± %.0f", lemons, 4*sd)
	}
	// The rate of a fresh board, averaged over the fleet, is the preset's.
	var sum float64
	for gpu := range o.GPUs {
		m, _ := o.BoardHazard(gpu, 0)
		sum += m
	}
	if mean := sum / 20000; math.Abs(mean-1) > 4*math.Sqrt(0.05*0.95)*7/1.35/math.Sqrt(20000) {
		t.Errorf("mean multiple of fresh boards %.4f, want 1", mean)
	}

	o.Hazard = Hazard{}
	s = planFleet(t, o)
	rate := s.failures / (s.steps / stepsPerHour) * 1000
	if sd := math.Sqrt(s.failures) / (s.steps / stepsPerHour) * 1000; math.Abs(rate-0.15) > 4*sd {
		t.Errorf("lemon-free fleet fails %.3f per 1,000 GPU-hours, want 0.15 ± %.3f", rate, 4*sd)
	}
	if s.lemonFailures != 0 {
		t.Error("a lemon-free fleet has lemons")
	}
}

// Covariates multiply the rate by position and load, normalised away;
// the zero Hazard changes nothing.
func TestHazardCovariates(t *testing.T) {
	o := Options{GPUs: 8 * 10, Days: 1, Hazard: Hazard{RackSize: 5, TopMultiple: 2, BusyShare: 0.5, BusyMultiple: 1.5}}
	if err := o.complete(); err != nil {
		t.Fatal(err)
	}
	var sum float64
	for gpu := range o.GPUs {
		m, lemon := o.BoardHazard(gpu, 0)
		if lemon {
			t.Fatal("a lemon without a lemon share")
		}
		sum += m
	}
	if math.Abs(sum/float64(o.GPUs)-1) > 1e-12 {
		t.Errorf("mean multiple %v, want 1", sum/float64(o.GPUs))
	}
	top, _ := o.BoardHazard(4*8, 0)    // node 4: top of rack 0, busy
	bottom, _ := o.BoardHazard(5*8, 0) // node 5: bottom of rack 1, idle
	if r := top / bottom; math.Abs(r-3) > 1e-12 {
		t.Errorf("hottest busy over coolest idle %v, want 2 × 1.5", r)
	}
	if m, lemon := (&Options{GPUs: 8}).BoardHazard(3, 2); m != 1 || lemon {
		t.Error("the zero Hazard changed a board's rate")
	}
	if err := (&Options{GPUs: 8, Days: 1, Hazard: Hazard{LemonShare: 0.1}}).complete(); err == nil {
		t.Error("a lemon share without a multiple accepted")
	}
}
