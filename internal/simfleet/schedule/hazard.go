package schedule

import (
	"cmp"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/gpuheal/gpuheal/internal/hazard"
)

// Hazard says how the boards of a fleet differ in failure rate: a board
// is one machine in a slot, board 0 the first, board k the k-th
// replacement (internal/hazard).
type Hazard = hazard.Hazard

// DefaultHazard is the lemon fleet the soak runs unless told otherwise:
// 5 % lemons failing 8 times as often, so that lemons are behind about
// 30 % of the failures (0.05·8 / (0.95 + 0.05·8)). Both figures are
// assumptions: Kokolis et al. (HPCA 2025) report lemon nodes but the
// figures were not found in the stored sources. The covariates are off
// by default, since no published size was found for either.
func DefaultHazard() Hazard { return Hazard{LemonShare: 0.05, LemonMultiple: 8} }

// norm is the mean unnormalised multiple of a fresh board over the fleet.
func norm(h Hazard, slots int) float64 {
	var sum float64
	for i := range slots {
		sum += h.Covariate(i, slots)
	}
	return h.LemonMean() * sum / float64(slots)
}

// Board is one machine of a slot and its hazard.
type Board struct {
	Slot  string `json:"slot"`
	Board int    `json:"board"` // generation: 0 the first machine, k the k-th replacement
	Lemon bool   `json:"lemon,omitempty"`
	// Multiple is the board's rate over the mean rate of a fresh board.
	Multiple float64 `json:"multiple"`
	// PerMinute is the board's fault rate.
	PerMinute float64 `json:"perMinute"`
}

// MaxBoards bounds the boards drawn per slot.
const MaxBoards = 16

// boardStream is the random stream of one (seed, slot, board, use): each
// board draws alone, so its lemon and its faults do not depend on how
// many slots or boards the fleet has, nor on the hazard's other figures.
func boardStream(seed int64, slot string, board int, use uint64) *rand.Rand {
	h := fnv.New64a()
	_, _ = h.Write([]byte(slot))
	return rand.New(rand.NewPCG(uint64(seed)^0xb0a4d5eed, h.Sum64()^(uint64(board)<<8|use)*0x9e3779b97f4a7c15)) //nolint:gosec // a reproducible simulation
}

// boardOf draws the hazard of the slot's board; norm is h.norm(slots).
func boardOf(seed int64, slots []string, index, board int, perMinute float64, h Hazard, norm float64) Board {
	b := Board{Slot: slots[index], Board: board, Multiple: h.Covariate(index, len(slots))}
	// Always drawn, so that a higher share makes a superset of lemons.
	if u := boardStream(seed, slots[index], board, 0).Float64(); u < h.LemonShare {
		b.Lemon = true
		b.Multiple *= h.LemonMultiple
	}
	b.Multiple /= norm
	b.PerMinute = perMinute / float64(len(slots)) * b.Multiple
	return b
}

// Boards gives boards 0 to boards-1 of every slot, slot by slot: what a
// draw of seed makes of the fleet, for a report of which boards were
// lemons.
func Boards(seed int64, slots []string, boards int, perMinute float64, h Hazard) []Board {
	if len(slots) == 0 {
		return nil
	}
	norm := norm(h, len(slots))
	out := make([]Board, 0, len(slots)*boards)
	for i := range slots {
		for b := range boards {
			out = append(out, boardOf(seed, slots, i, b, perMinute, h, norm))
		}
	}
	return out
}

// DrawBoardSchedule draws faults per board: each (slot, board) gets a
// Poisson process at its board's rate over the whole duration, from its
// own random stream, every fault pinned to its board. A fault applies
// only while its board is the slot's machine (a reboot keeps the board,
// a replacement installs the next one, whose faults were drawn too), so
// two runs with one seed see the same faults on the same boards whatever
// their repairs did: common random numbers. Board k+1 is drawn while
// board k had a fault (only a fault gets a board replaced), up to
// MaxBoards. The fleet of fresh boards expects perMinute faults a minute.
func DrawBoardSchedule(seed int64, slots []string, gpus int, perMinute float64, duration time.Duration, h Hazard) []ScheduledFault {
	if perMinute <= 0 || len(slots) == 0 {
		return nil
	}
	norm := norm(h, len(slots))
	var out []ScheduledFault
	for i := range slots {
		for board := range MaxBoards {
			b := boardOf(seed, slots, i, board, perMinute, h, norm)
			n := len(out)
			out = append(out, boardFaults(seed, b, gpus, duration)...)
			if len(out) == n {
				break
			}
		}
	}
	slices.SortStableFunc(out, func(a, b ScheduledFault) int { return cmp.Compare(a.At, b.At) })
	return out
}

// boardFaults draws one board's faults: unit-rate arrivals scaled by the
// board's rate, so a lemon's faults are a normal board's, denser.
func boardFaults(seed int64, b Board, gpus int, duration time.Duration) []ScheduledFault {
	rng := boardStream(seed, b.Slot, b.Board, 1)
	var out []ScheduledFault
	s := 0.0
	for {
		s += rng.ExpFloat64()
		at := s / b.PerMinute * float64(time.Minute)
		if !(at < float64(duration)) {
			return out
		}
		c := Draw(rng)
		out = append(out, ScheduledFault{At: time.Duration(at), Slot: b.Slot, Class: c.Name, GPU: rng.IntN(max(gpus, 1)), Board: b.Board, Pinned: true})
	}
}
