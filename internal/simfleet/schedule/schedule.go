// Package schedule is the sim fleet's data, shared by the fleet
// (internal/simfleet), the soak that plans and checks its faults, and the
// CLI: the failure mix, fault schedules, the journal of what was injected
// where, and the slots that tell a fleet's machines apart across
// replacements. It is plain data and files: it links no agent, analyzer
// or GPU library, so the soak and the CLI stay light.
package schedule

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"regexp"
	"slices"
	"time"
)

// ScheduledFault is one fault of a fleet schedule: at At after the
// schedule's epoch, class (a name of the failure mix) hits GPU of the node
// in Slot. A slot is a node's name without the replacement suffix the kwok
// provider adds, so a fault still finds the machine that took a replaced
// node's place, and two runs of one schedule hit the same places.
//
// A pinned fault belongs to board generation Board of its slot (Lineage)
// and applies only while that board is the slot's machine. An unpinned
// one (the zero value, DrawSchedule's, and every line without "board" in
// a schedule file, as files were before boards) hits whatever machine is
// in the slot. In JSON, "board" is present exactly when the fault is
// pinned.
type ScheduledFault struct {
	At     time.Duration
	Slot   string
	Class  string
	GPU    int
	Board  int
	Pinned bool
}

// scheduledFaultJSON is a schedule file's line.
type scheduledFaultJSON struct {
	At    time.Duration `json:"at"`
	Slot  string        `json:"slot"`
	Class string        `json:"class"`
	GPU   int           `json:"gpu"`
	Board *int          `json:"board,omitempty"`
}

// MarshalJSON writes "board" only for a pinned fault.
func (f ScheduledFault) MarshalJSON() ([]byte, error) {
	j := scheduledFaultJSON{At: f.At, Slot: f.Slot, Class: f.Class, GPU: f.GPU}
	if f.Pinned {
		j.Board = &f.Board
	}
	return json.Marshal(j)
}

// UnmarshalJSON pins the fault when the line names a board.
func (f *ScheduledFault) UnmarshalJSON(data []byte) error {
	var j scheduledFaultJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	*f = ScheduledFault{At: j.At, Slot: j.Slot, Class: j.Class, GPU: j.GPU}
	if j.Board != nil {
		f.Board, f.Pinned = *j.Board, true
	}
	return nil
}

// AppliesTo reports whether the fault hits board generation board of its
// slot.
func (f ScheduledFault) AppliesTo(board int) bool { return !f.Pinned || f.Board == board }

// DrawSchedule draws faults from the failure mix at rate per minute over
// duration, on slots chosen uniformly: the same seed gives the same list.
// Its faults are unpinned: a homogeneous fleet, where a replacement
// inherits its slot's faults (DrawBoardSchedule draws per board).
func DrawSchedule(seed int64, slots []string, gpus int, perMinute float64, duration time.Duration) []ScheduledFault {
	if perMinute <= 0 || len(slots) == 0 {
		return nil
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 0xfa17)) //nolint:gosec // a reproducible simulation
	var out []ScheduledFault
	at := time.Duration(0)
	for {
		at += time.Duration(rng.ExpFloat64() / perMinute * float64(time.Minute))
		if at >= duration {
			return out
		}
		c := Draw(rng)
		out = append(out, ScheduledFault{At: at, Slot: slots[rng.IntN(len(slots))], Class: c.Name, GPU: rng.IntN(max(gpus, 1))})
	}
}

// WriteSchedule stores a schedule as JSON lines.
func WriteSchedule(path string, s []ScheduledFault) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(f)
	for _, e := range s {
		if err := enc.Encode(e); err != nil {
			_ = f.Close()
			return err
		}
	}
	return f.Close()
}

// LoadSchedule reads a schedule of JSON lines, sorted by time; a bad line
// is an error naming its line number.
func LoadSchedule(path string) ([]ScheduledFault, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	return ReadSchedule(f, path)
}

// ReadSchedule reads a schedule of JSON lines from r, sorted by time;
// name is what errors call it.
func ReadSchedule(r io.Reader, path string) ([]ScheduledFault, error) {
	var out []ScheduledFault
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var e ScheduledFault
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		if _, ok := ClassNamed(e.Class); !ok || e.Slot == "" || e.At < 0 || e.Board < 0 {
			return nil, fmt.Errorf("%s:%d: want a known class, a slot, a non-negative at and board; got %+v", path, line, e)
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	slices.SortStableFunc(out, func(a, b ScheduledFault) int { return cmp.Compare(a.At, b.At) })
	return out, nil
}

var replacementSuffix = regexp.MustCompile(`-r[0-9a-f]{6}$`)

// SlotOf is the node's place in the fleet: its name without the kwok
// provider's replacement suffix.
func SlotOf(node string) string { return replacementSuffix.ReplaceAllString(node, "") }
