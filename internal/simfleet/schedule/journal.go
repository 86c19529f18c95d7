package schedule

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/gpuheal/gpuheal/internal/gpu/sim"
)

// Injection is one line of the fleet's injection journal: what was put
// where, or why a scheduled fault was not.
type Injection struct {
	Index int       `json:"index"` // in the schedule; IndexDrawn, IndexSurfaced or IndexRequested otherwise
	Time  time.Time `json:"time"`
	Node  string    `json:"node,omitempty"`
	Slot  string    `json:"slot"`
	Class string    `json:"class"`
	Kind  sim.Kind  `json:"kind"`
	GPU   int       `json:"gpu"`
	// Board is the board generation (Lineage) a scheduled fault was for:
	// a pinned fault's own, else that of the machine it hit.
	Board   int    `json:"board"`
	Fatal   bool   `json:"fatal"`
	Skipped string `json:"skipped,omitempty"`
}

// Indexes of injections that are not in the schedule.
const (
	IndexDrawn     = -1 // drawn from the failure mix at random
	IndexSurfaced  = -2 // a planted latent fault that surfaced under workload
	IndexRequested = -3 // asked for over the fleet's HTTP API (the demo's repeat offender)
)

// ClassSurfaced is the class journaled when a latent fault surfaces: a
// fatal fault of its own, which the soak expects to be repaired like any.
const ClassSurfaced = "latent-surfaced"

// InjectionJournal is the file in the fleet's directory that lists every
// injection; a restarted fleet reads it to go on where it stopped.
const InjectionJournal = "injections.jsonl"

// ReadInjections reads a fleet's journal.
func ReadInjections(dir string) ([]Injection, error) {
	f, err := os.Open(filepath.Join(dir, InjectionJournal))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	var out []Injection
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		var in Injection
		if err := json.Unmarshal(sc.Bytes(), &in); err != nil {
			// A line cut by a crash mid-write is the only one that can be
			// bad: the journal is append-only.
			return out, fmt.Errorf("%s:%d: %w", InjectionJournal, line, err)
		}
		out = append(out, in)
	}
	return out, sc.Err()
}

// AppendInjection adds one injection to the journal in dir.
func AppendInjection(dir string, in Injection) error {
	data, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("encoding injection %d: %w", in.Index, err)
	}
	f, err := os.OpenFile(filepath.Join(dir, InjectionJournal), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(data, '\n')); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// SMIChaosDir is where, under the fleet's directory, a file named after a
// node makes that node's agent read "nvidia-smi -q -x" output from it
// instead of its simulated GPUs: the soak puts broken output there (cut
// XML, noise, the driver's error text, nothing at all) to check that a
// damaged read never becomes a repair by itself. An empty file stands for
// nvidia-smi failing with no output.
const SMIChaosDir = "smi-chaos"
