package kmsg

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// PositionFile is the name of the saved position in a state directory.
const PositionFile = "kmsg-position.json"

// DefaultBootIDPath is where Linux gives the current boot's random id.
const DefaultBootIDPath = "/proc/sys/kernel/random/boot_id"

// Position is how far an agent has read: the last record it handled, in
// the boot it handled it in. Sequence numbers restart at every boot, so
// a Seq means nothing without its BootID.
type Position struct {
	BootID string `json:"bootID"`
	Seq    uint64 `json:"seq"`
}

func (p Position) sameBoot(boot string) bool { return p.BootID != "" && p.BootID == boot }

// ResumeFilter reports for each record whether saved does not cover it
// yet: in the same boot only records after saved.Seq are new; in another
// boot (or with no saved position, BootID "") every record is. Records
// without a sequence number (text forms) are always new: there is
// nothing to compare.
func ResumeFilter(saved Position, currentBoot string) func(Record) bool {
	if !saved.sameBoot(currentBoot) {
		return func(Record) bool { return true }
	}
	return func(r Record) bool { return !r.HasSeq || r.Seq > saved.Seq }
}

// ReadBootID reads the current boot id; path "" means DefaultBootIDPath
// (tests and containers with /proc elsewhere pass their own).
func ReadBootID(path string) (string, error) {
	if path == "" {
		path = DefaultBootIDPath
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("reading boot id: %w", err)
	}
	id := strings.TrimSpace(string(b))
	if id == "" {
		return "", fmt.Errorf("reading boot id: %s is empty", path)
	}
	return id, nil
}

// LoadPosition reads dir/kmsg-position.json. A missing file is not an
// error: the zero Position, which covers nothing, is returned.
func LoadPosition(dir string) (Position, error) {
	path := filepath.Join(dir, PositionFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Position{}, nil
	}
	if err != nil {
		return Position{}, fmt.Errorf("loading kernel-log position: %w", err)
	}
	var p Position
	if err := json.Unmarshal(b, &p); err != nil {
		return Position{}, fmt.Errorf("loading kernel-log position from %s: %w", path, err)
	}
	return p, nil
}

// SavePosition writes dir/kmsg-position.json atomically (a temporary
// file renamed over it, synced first), so a crash leaves either the old
// position or the new one, never half a file.
func SavePosition(dir string, p Position) error {
	b, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("saving kernel-log position: %w", err)
	}
	f, err := os.CreateTemp(dir, "."+PositionFile+".*")
	if err != nil {
		return fmt.Errorf("saving kernel-log position: %w", err)
	}
	tmp := f.Name()
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, PositionFile))
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("saving kernel-log position: %w", err)
	}
	return nil
}
