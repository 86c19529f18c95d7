package fleetsim

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// GPUsPerNode is how many GPU slots make a node, for the slot covariates.
const GPUsPerNode = 8

// Hazard makes the fleet's boards differ in failure rate, with the
// parameters of the sim fleet's (internal/simfleet/schedule.Hazard, which
// a domain package cannot import): a board is a lemon with probability
// LemonShare and then fails LemonMultiple times as often; a node's
// position in its rack (hotter at the top) and its load (the nodes a
// scheduler fills first) multiply the rate too. Rates are normalised so
// that a fleet of fresh boards keeps the preset's rate. The zero Hazard
// is the homogeneous fleet, and gives the same bytes as before boards
// had hazards. docs/reliability.md, "A fleet with lemons", gives the
// sources.
type Hazard struct {
	LemonShare    float64
	LemonMultiple float64
	// RackSize nodes make a rack, in node order (GPU slot / GPUsPerNode);
	// position 0 is the coolest. 0 or 1: no position covariate.
	RackSize int
	// TopMultiple is the hottest position's hazard over the coolest's,
	// linear in between.
	TopMultiple float64
	// BusyShare of the nodes, the first in order, carry the most load,
	// at BusyMultiple times the others' hazard.
	BusyShare, BusyMultiple float64
}

// Off reports whether the fleet is homogeneous.
func (h Hazard) Off() bool { return h.LemonShare == 0 && !h.positionOn() && !h.loadOn() }

func (h Hazard) positionOn() bool { return h.RackSize > 1 && h.TopMultiple > 0 && h.TopMultiple != 1 }
func (h Hazard) loadOn() bool     { return h.BusyShare > 0 && h.BusyMultiple > 0 && h.BusyMultiple != 1 }

func (h Hazard) validate() error {
	switch {
	case !(h.LemonShare >= 0 && h.LemonShare <= 1):
		return fmt.Errorf("lemon share %v: want 0 to 1", h.LemonShare)
	case h.LemonShare > 0 && !(h.LemonMultiple >= 1 && h.LemonMultiple <= 1000):
		return fmt.Errorf("lemon multiple %v: want 1 to 1000", h.LemonMultiple)
	case h.RackSize < 0:
		return fmt.Errorf("rack size %d: must not be negative", h.RackSize)
	case !(h.TopMultiple >= 0 && h.TopMultiple <= 100):
		return fmt.Errorf("top-of-rack multiple %v: want 0 to 100", h.TopMultiple)
	case !(h.BusyShare >= 0 && h.BusyShare <= 1):
		return fmt.Errorf("busy share %v: want 0 to 1", h.BusyShare)
	case !(h.BusyMultiple >= 0 && h.BusyMultiple <= 100):
		return fmt.Errorf("busy multiple %v: want 0 to 100", h.BusyMultiple)
	}
	return nil
}

// covariate is the GPU slot's position and load factor, unnormalised.
func (h Hazard) covariate(gpu, gpus int) float64 {
	c := 1.0
	node, nodes := gpu/GPUsPerNode, (gpus+GPUsPerNode-1)/GPUsPerNode
	if h.positionOn() {
		c *= 1 + (h.TopMultiple-1)*float64(node%h.RackSize)/float64(h.RackSize-1)
	}
	if h.loadOn() && node < int(math.Ceil(h.BusyShare*float64(nodes))) {
		c *= h.BusyMultiple
	}
	return c
}

// norm is the mean unnormalised multiple of a fresh board.
func (h Hazard) norm(gpus int) float64 {
	var sum float64
	for g := range gpus {
		sum += h.covariate(g, gpus)
	}
	lemon := 1.0
	if h.LemonShare > 0 {
		lemon = 1 - h.LemonShare + h.LemonShare*h.LemonMultiple
	}
	return lemon * sum / float64(gpus)
}

// BoardHazard is the failure-rate multiple of board (0 the first, k after
// the k-th failure's repair) of GPU slot gpu, and whether it is a lemon.
// Each board draws from a stream of its own, apart from the slot's, so a
// homogeneous fleet's traces do not change.
func (o *Options) BoardHazard(gpu, board int) (multiple float64, lemon bool) {
	h := o.Hazard
	if h.Off() {
		return 1, false
	}
	norm := o.hazardNorm
	if norm == 0 { // options not completed: slow, but right
		norm = h.norm(o.GPUs)
	}
	multiple = h.covariate(gpu, o.GPUs)
	r := rand.New(rand.NewPCG(splitmix(o.Seed^0x1e3011e3+uint64(gpu)), splitmix(uint64(board)*0x9e3779b97f4a7c15^uint64(gpu)))) //nolint:gosec // a reproducible simulation
	if r.Float64() < h.LemonShare {
		multiple, lemon = multiple*h.LemonMultiple, true
	}
	return multiple / norm, lemon
}
