package soak

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuheal/gpuheal/internal/simfleet/schedule"
)

// The zero Hazard draws today's schedule; a lemon fleet draws per board,
// keeps a latent fault on its carrier's board, and lists its boards.
func TestSoakDrawsPerBoard(t *testing.T) {
	slots := []string{"n-0", "n-1", "n-2", "n-3", "n-4", "n-5", "n-6", "n-7"}
	o := Options{Seed: 3, Duration: 10 * time.Hour}
	if diff := cmp.Diff(schedule.DrawSchedule(3, slots, 8, 1, o.Duration), drawSchedule(o, slots, 1)); diff != "" {
		t.Fatalf("the homogeneous fleet's schedule changed (-old +new):\n%s", diff)
	}
	o.Hazard = schedule.DefaultHazard()
	faults := plantLatent(drawSchedule(o, slots, 1), 1, o.Seed)
	latent := 0
	for i, f := range faults {
		if !f.Pinned {
			t.Fatalf("fault %+v not pinned to a board", f)
		}
		if f.Class == latentClass {
			latent++
			if carrier := faults[i+1]; carrier.Class != latentCarrier || carrier.Board != f.Board || carrier.Slot != f.Slot {
				t.Errorf("latent fault %+v is not on its carrier's board %+v", f, carrier)
			}
		}
	}
	if latent == 0 {
		t.Fatal("no latent fault planted at share 1")
	}
	path := filepath.Join(t.TempDir(), boardsFile)
	if err := writeBoards(path, o, slots, 1, faults); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var first schedule.Board
	line, _, _ := bytes.Cut(data, []byte("\n"))
	if err := json.Unmarshal(line, &first); err != nil || first.Slot != "n-0" || first.Board != 0 || first.PerMinute <= 0 {
		t.Errorf("first board line %+v, %v", first, err)
	}
	o.Hazard.LemonMultiple = 0.5
	o.Nodes, o.Speed, o.Mode = 8, 1, Live
	if o.Validate() == nil {
		t.Error("a lemon multiple below 1 accepted")
	}
}
