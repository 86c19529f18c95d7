package fleetsim

import (
	"math/rand/v2"

	"github.com/gpuheal/gpuheal/internal/hazard"
)

// GPUsPerNode is how many GPU slots make a node, for the slot covariates.
const GPUsPerNode = 8

// Hazard makes the fleet's boards differ in failure rate, as the sim
// fleet's do (internal/hazard): covariates by node (GPU slot /
// GPUsPerNode), normalised so that a fleet of fresh boards keeps the
// preset's rate. The zero Hazard gives the same bytes as before boards had
// hazards.
type Hazard = hazard.Hazard

// hazardNorm is the mean unnormalised multiple of a fresh board.
func hazardNorm(h Hazard, gpus int) float64 {
	nodes := (gpus + GPUsPerNode - 1) / GPUsPerNode
	var sum float64
	for g := range gpus {
		sum += h.Covariate(g/GPUsPerNode, nodes)
	}
	return h.LemonMean() * sum / float64(gpus)
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
		norm = hazardNorm(h, o.GPUs)
	}
	multiple = h.Covariate(gpu/GPUsPerNode, (o.GPUs+GPUsPerNode-1)/GPUsPerNode)
	r := rand.New(rand.NewPCG(splitmix(o.Seed^0x1e3011e3+uint64(gpu)), splitmix(uint64(board)*0x9e3779b97f4a7c15^uint64(gpu)))) //nolint:gosec // a reproducible simulation
	if r.Float64() < h.LemonShare {
		multiple, lemon = multiple*h.LemonMultiple, true
	}
	return multiple / norm, lemon
}
