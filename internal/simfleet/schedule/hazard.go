package schedule

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// Hazard says how the boards of a fleet differ in failure rate. A board
// is one machine in a slot: board 0 the first, board k the k-th
// replacement. Its rate is the fleet's base rate times a lemon factor
// (drawn per board) times two covariates of its slot (fixed per slot),
// normalised so that a fleet of fresh boards keeps the fleet-wide rate
// asked for. The zero Hazard is a homogeneous fleet. docs/reliability.md,
// "A fleet with lemons", gives the sources and which figures are
// assumptions.
type Hazard struct {
	// LemonShare is the probability that a board is a lemon.
	LemonShare float64
	// LemonMultiple is a lemon's failure rate over a normal board's.
	LemonMultiple float64
	// RackSize slots make a rack, in the fleet's order; a slot's position
	// in its rack is its index modulo RackSize, 0 the coolest (the bottom,
	// where the cooling air comes in). 0 or 1: no position covariate.
	RackSize int
	// TopMultiple is the hazard of the hottest position over the coolest,
	// linear in between; 0 or 1: no position covariate.
	TopMultiple float64
	// BusyShare of the slots, the first in the fleet's order (the ones a
	// scheduler that fills in order gives work first), carry the most
	// load.
	BusyShare float64
	// BusyMultiple is the hazard of a busy slot over the others; 0 or 1:
	// no load covariate.
	BusyMultiple float64
}

// DefaultHazard is the lemon fleet the soak runs unless told otherwise:
// 5 % lemons failing 8 times as often, so that lemons are behind about
// 30 % of the failures (0.05·8 / (0.95 + 0.05·8)). Both figures are
// assumptions: Kokolis et al. (HPCA 2025) report lemon nodes but the
// figures were not found in the stored sources. The covariates are off
// by default, since no published size was found for either.
func DefaultHazard() Hazard { return Hazard{LemonShare: 0.05, LemonMultiple: 8} }

// Off reports whether h is a homogeneous fleet: no lemons, no covariates.
func (h Hazard) Off() bool {
	return h.LemonShare == 0 && !h.positionOn() && !h.loadOn()
}

func (h Hazard) positionOn() bool { return h.RackSize > 1 && h.TopMultiple > 0 && h.TopMultiple != 1 }
func (h Hazard) loadOn() bool {
	return h.BusyShare > 0 && h.BusyMultiple > 0 && h.BusyMultiple != 1
}

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

// covariate is the slot's position and load factor, unnormalised.
func (h Hazard) covariate(index, slots int) float64 {
	c := 1.0
	if h.positionOn() {
		c *= 1 + (h.TopMultiple-1)*float64(index%h.RackSize)/float64(h.RackSize-1)
	}
	if h.loadOn() && index < busySlots(h.BusyShare, slots) {
		c *= h.BusyMultiple
	}
	return c
}

func busySlots(share float64, slots int) int { return int(math.Ceil(share * float64(slots))) }

// norm is the mean unnormalised multiple of a fresh board over the fleet.
func (h Hazard) norm(slots int) float64 {
	var sum float64
	for i := range slots {
		sum += h.covariate(i, slots)
	}
	lemon := 1.0
	if h.LemonShare > 0 {
		lemon = 1 - h.LemonShare + h.LemonShare*h.LemonMultiple
	}
	return lemon * sum / float64(slots)
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
	b := Board{Slot: slots[index], Board: board, Multiple: h.covariate(index, len(slots))}
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
	norm := h.norm(len(slots))
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
	norm := h.norm(len(slots))
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
