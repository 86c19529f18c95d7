// Package hazard says how the boards of a simulated fleet differ in
// failure rate: lemons, and two covariates of a node's place in the fleet.
// The sim fleet's fault schedule (internal/simfleet/schedule) and the
// predictor's trace simulator (internal/fleetsim) draw their boards from
// it. docs/reliability.md, "A fleet with lemons", gives the sources and
// which figures are assumptions.
package hazard

import (
	"fmt"
	"math"
)

// Hazard is the heterogeneity. A board's rate is the fleet's base rate
// times a lemon factor (drawn per board) times the covariates of its node
// (fixed per node), normalised by the caller so that a fleet of fresh
// boards keeps the rate asked for. The zero Hazard is a homogeneous fleet.
type Hazard struct {
	// LemonShare is the probability that a board is a lemon.
	LemonShare float64
	// LemonMultiple is a lemon's failure rate over a normal board's.
	LemonMultiple float64
	// RackSize nodes make a rack, in the fleet's order; a node's position
	// in its rack is its index modulo RackSize, 0 the coolest (the bottom,
	// where the cooling air comes in). 0 or 1: no position covariate.
	RackSize int
	// TopMultiple is the hazard of the hottest position over the coolest,
	// linear in between; 0 or 1: no position covariate.
	TopMultiple float64
	// BusyShare of the nodes, the first in the fleet's order (the ones a
	// scheduler that fills in order gives work first), carry the most
	// load.
	BusyShare float64
	// BusyMultiple is the hazard of a busy node over the others; 0 or 1:
	// no load covariate.
	BusyMultiple float64
}

// Off reports whether h is a homogeneous fleet: no lemons, no covariates.
func (h Hazard) Off() bool { return h.LemonShare == 0 && !h.positionOn() && !h.loadOn() }

func (h Hazard) positionOn() bool { return h.RackSize > 1 && h.TopMultiple > 0 && h.TopMultiple != 1 }
func (h Hazard) loadOn() bool     { return h.BusyShare > 0 && h.BusyMultiple > 0 && h.BusyMultiple != 1 }

// Validate names the first bad field.
func (h Hazard) Validate() error {
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

// Covariate is the position and load factor of node index of a fleet of
// nodes, unnormalised.
func (h Hazard) Covariate(index, nodes int) float64 {
	c := 1.0
	if h.positionOn() {
		c *= 1 + (h.TopMultiple-1)*float64(index%h.RackSize)/float64(h.RackSize-1)
	}
	if h.loadOn() && index < int(math.Ceil(h.BusyShare*float64(nodes))) {
		c *= h.BusyMultiple
	}
	return c
}

// LemonMean is the mean lemon factor of a fresh board.
func (h Hazard) LemonMean() float64 {
	if h.LemonShare > 0 {
		return 1 - h.LemonShare + h.LemonShare*h.LemonMultiple
	}
	return 1
}
