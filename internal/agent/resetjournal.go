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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
)

// resetJournal remembers every GPU reset request the agent took, by
// request ID, so that it acts on each at most once, across restarts: an
// ID is written (and the file replaced) before the reset starts, and its
// answer when it ends. A request journaled but unanswered after a restart
// was interrupted: it is answered Failed/ResetInterrupted, never run
// again (the GPU may be half reset; the controller reboots the node).
// Without a state directory (a sim fleet's agents) it lives in memory.
type resetJournal struct {
	path string // "": in memory

	mu      sync.Mutex
	entries []resetEntry
}

// ResetJournalFile is the journal's name in the state directory.
const ResetJournalFile = "gpu-resets.json"

// resetJournalMax bounds the journal; the oldest answered requests go
// first (a controller never asks again for an ID that old).
const resetJournalMax = 64

type resetEntry struct {
	RequestID string            `json:"requestID"`
	GPUs      []v1alpha1.GPURef `json:"gpus"`
	StartedAt metav1.Time       `json:"startedAt"`
	// Report is the final answer; nil while the reset runs.
	Report *v1alpha1.GPUResetReport `json:"report,omitempty"`
}

type resetJournalFile struct {
	Entries []resetEntry `json:"entries"`
}

// openResetJournal loads the journal in dir ("" keeps it in memory). An
// unreadable journal is an error: acting without knowing which requests
// were taken could reset a GPU twice, so the agent then takes none.
func openResetJournal(dir string) (*resetJournal, error) {
	j := &resetJournal{}
	if dir == "" {
		return j, nil
	}
	j.path = filepath.Join(dir, ResetJournalFile)
	data, err := os.ReadFile(j.path)
	if errors.Is(err, fs.ErrNotExist) {
		return j, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", j.path, err)
	}
	var f resetJournalFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", j.path, err)
	}
	j.entries = f.Entries
	return j, nil
}

// lookup is the entry of a request ID.
func (j *resetJournal) lookup(id string) (resetEntry, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, e := range j.entries {
		if e.RequestID == id {
			return e, true
		}
	}
	return resetEntry{}, false
}

// start records that the request is taken; the reset may begin only once
// it returned nil.
func (j *resetJournal) start(id string, gpus []v1alpha1.GPURef, at metav1.Time) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if slices.ContainsFunc(j.entries, func(e resetEntry) bool { return e.RequestID == id }) {
		return fmt.Errorf("GPU reset request %s is already journaled", id)
	}
	j.entries = append(j.entries, resetEntry{RequestID: id, GPUs: gpus, StartedAt: at})
	for len(j.entries) > resetJournalMax {
		i := slices.IndexFunc(j.entries, func(e resetEntry) bool { return e.Report != nil })
		if i < 0 {
			i = 0
		}
		j.entries = slices.Delete(j.entries, i, i+1)
	}
	return j.writeLocked()
}

// finish records the request's final answer.
func (j *resetJournal) finish(r *v1alpha1.GPUResetReport) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	for i := range j.entries {
		if j.entries[i].RequestID == r.RequestID {
			j.entries[i].Report = r
			return j.writeLocked()
		}
	}
	return fmt.Errorf("GPU reset request %s is not journaled", r.RequestID)
}

// unfinished lists the requests taken and never answered: a restart
// interrupted them.
func (j *resetJournal) unfinished() []resetEntry {
	j.mu.Lock()
	defer j.mu.Unlock()
	var out []resetEntry
	for _, e := range j.entries {
		if e.Report == nil {
			out = append(out, e)
		}
	}
	return out
}

// writeLocked replaces the file (temp file, fsync, rename, fsync of the
// directory): after a crash it holds the old journal or the new one, and
// a taken request is on disk before the reset starts. Without the
// directory's fsync the rename itself may be lost to a power cut, and
// with it the "taken" entry: the agent could then reset twice.
func (j *resetJournal) writeLocked() error {
	if j.path == "" {
		return nil
	}
	data, err := json.Marshal(resetJournalFile{Entries: j.entries})
	if err != nil {
		return err
	}
	tmp := j.path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("writing %s: %w", tmp, err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, j.path); err != nil {
		return fmt.Errorf("replacing %s: %w", j.path, err)
	}
	return syncDir(filepath.Dir(j.path))
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("opening %s to sync it: %w", dir, err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("syncing directory %s: %w", dir, err)
	}
	return nil
}
