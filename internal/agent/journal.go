package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/gpuheal/gpuheal/internal/finding"
)

// findingJournal keeps the fatal findings of the current boot in the state
// directory. The kernel-log position makes a restarted agent skip lines it
// already read, so without the journal a restart would forget a latched
// Xid 79 and turn the node healthy again. On start, the findings of the
// same boot are replayed into the analyzer: latched rules re-arm, findings
// past their clearAfter raise nothing. A new boot starts an empty journal.
type findingJournal struct {
	path string
	max  int

	mu   sync.Mutex
	boot string
	list []finding.Finding
}

// JournalFile is the journal's name in the state directory.
const JournalFile = "fatal-findings.json"

// journalMax bounds the journal: a GPU in an error storm must not grow it
// without end. The newest findings are kept.
const journalMax = 256

type journalFile struct {
	BootID   string            `json:"bootID"`
	Findings []finding.Finding `json:"findings"`
}

// openJournal loads the journal for boot; findings of another boot are
// dropped. An unreadable journal is reported and starts empty: losing it
// costs a latched state, refusing to start would cost all monitoring.
func openJournal(dir, boot string) (*findingJournal, []finding.Finding, error) {
	j := &findingJournal{path: filepath.Join(dir, JournalFile), max: journalMax, boot: boot}
	data, err := os.ReadFile(j.path)
	if errors.Is(err, fs.ErrNotExist) {
		return j, nil, nil
	}
	if err != nil {
		return j, nil, fmt.Errorf("reading %s: %w", j.path, err)
	}
	var f journalFile
	if err := json.Unmarshal(data, &f); err != nil {
		return j, nil, fmt.Errorf("%s: %w", j.path, err)
	}
	if f.BootID != boot {
		return j, nil, nil
	}
	j.list = f.Findings
	return j, append([]finding.Finding(nil), f.Findings...), nil
}

// forgetGPU drops the findings of the GPU at bus (it was reset and
// verified) and writes the journal.
func (j *findingJournal) forgetGPU(bus string) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	n := len(j.list)
	j.list = slices.DeleteFunc(j.list, func(f finding.Finding) bool { return f.GPU == bus })
	if len(j.list) == n {
		return nil
	}
	return j.writeLocked()
}

// record adds a fatal finding and writes the journal (temp file + rename,
// so a crash leaves the old or the new journal, never half of one).
func (j *findingJournal) record(f finding.Finding) error {
	if f.Severity != finding.Fatal {
		return nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.list = append(j.list, f)
	if len(j.list) > j.max {
		j.list = append(j.list[:0:0], j.list[len(j.list)-j.max:]...)
	}
	return j.writeLocked()
}

func (j *findingJournal) writeLocked() error {
	data, err := json.Marshal(journalFile{BootID: j.boot, Findings: j.list})
	if err != nil {
		return err
	}
	tmp := j.path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, j.path); err != nil {
		return fmt.Errorf("replacing %s: %w", j.path, err)
	}
	return nil
}
