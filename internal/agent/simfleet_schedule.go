package agent

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"time"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/gpu/sim"
)

// ScheduledFault is one fault of a fleet schedule: at At after the
// schedule's epoch, class (a name of the failure mix) hits GPU of the node
// in Slot. A slot is a node's name without the replacement suffix the kwok
// provider adds, so a fault still finds the machine that took a replaced
// node's place, and two runs of one schedule hit the same places.
type ScheduledFault struct {
	At    time.Duration `json:"at"`
	Slot  string        `json:"slot"`
	Class string        `json:"class"`
	GPU   int           `json:"gpu"`
}

// DrawSchedule draws faults from the failure mix at rate per minute over
// duration, on slots chosen uniformly: the same seed gives the same list.
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
		c := drawFault(rng)
		out = append(out, ScheduledFault{At: at, Slot: slots[rng.IntN(len(slots))], Class: c.name, GPU: rng.IntN(max(gpus, 1))})
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
	var out []ScheduledFault
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var e ScheduledFault
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		if _, ok := faultClassNamed(e.Class); !ok || e.Slot == "" || e.At < 0 {
			return nil, fmt.Errorf("%s:%d: want a known class, a slot and a non-negative at; got %+v", path, line, e)
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	slices.SortStableFunc(out, func(a, b ScheduledFault) int { return int(a.At - b.At) })
	return out, nil
}

func faultClassNamed(name string) (faultClass, bool) {
	for _, c := range faultMix {
		if c.name == name {
			return c, true
		}
	}
	return faultClass{}, false
}

var replacementSuffix = regexp.MustCompile(`-r[0-9a-f]{6}$`)

// SlotOf is the node's place in the fleet: its name without the kwok
// provider's replacement suffix.
func SlotOf(node string) string { return replacementSuffix.ReplaceAllString(node, "") }

// Injection is one line of the fleet's injection journal: what was put
// where, or why a scheduled fault was not.
type Injection struct {
	Index   int       `json:"index"` // in the schedule; -1 for a random draw
	Time    time.Time `json:"time"`
	Node    string    `json:"node,omitempty"`
	Slot    string    `json:"slot"`
	Class   string    `json:"class"`
	Kind    sim.Kind  `json:"kind"`
	GPU     int       `json:"gpu"`
	Fatal   bool      `json:"fatal"`
	Skipped string    `json:"skipped,omitempty"`
}

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

// nodeFaults is what a node's simulated hardware carries in this boot,
// kept on disk so that an agent restart finds the GPU still broken.
type nodeFaults struct {
	// Boot identifies the machine's boot: its UID and last reboot token.
	Boot    string      `json:"boot"`
	Faults  []sim.Fault `json:"faults"`
	Faulted bool        `json:"faulted"`
}

// bootOf is the node's UID and the kwok provider's record of its last
// reboot.
func bootOf(n *kubeNode) string {
	return string(n.UID) + "/" + n.Annotations[v1alpha1.AnnotationKwokRebootToken]
}

func (f *simFleet) faultsPath(node string) string {
	return filepath.Join(f.dir, "hardware", node+".json")
}

// loadFaults returns the faults of this boot of the node, if any.
func (f *simFleet) loadFaults(node, boot string) nodeFaults {
	var nf nodeFaults
	data, err := os.ReadFile(f.faultsPath(node))
	if err != nil || json.Unmarshal(data, &nf) != nil || nf.Boot != boot {
		return nodeFaults{Boot: boot}
	}
	return nf
}

func (f *simFleet) saveFaults(node string, nf nodeFaults) error {
	data, err := json.Marshal(nf)
	if err != nil {
		return err
	}
	path := f.faultsPath(node)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// journal appends one injection to the journal.
func (f *simFleet) journal(in Injection) {
	file, err := os.OpenFile(filepath.Join(f.dir, InjectionJournal), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		f.log.Error("sim fleet: journaling an injection", "err", err)
		return
	}
	data, _ := json.Marshal(in)
	if _, err := file.Write(append(data, '\n')); err != nil {
		f.log.Error("sim fleet: journaling an injection", "err", err)
	}
	_ = file.Close()
}
