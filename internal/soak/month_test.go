package soak

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gpuheal/gpuheal/internal/jobmodel"
	"github.com/gpuheal/gpuheal/internal/simfleet/schedule"
)

// The model runs on the live soak's board draw: the lemons it finds are
// the schedule's, and the table has every arm and every row.
func TestMonthRunsTheScheduleBoards(t *testing.T) {
	m := DefaultMonth(schedule.DefaultHazard())
	m.Model.Nodes, m.Model.Days, m.Seeds = 64, 10, 2
	m.Model.FailuresPerNodeHour *= 4
	rows, err := Month(m)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 || len(rows[0].Runs) != 2 {
		t.Fatalf("%d arms, %d runs", len(rows), len(rows[0].Runs))
	}
	lemons := 0
	for _, b := range schedule.Boards(1, monthSlots(64), 1, 1, m.Hazard) {
		if b.Lemon {
			lemons++
		}
	}
	if lemons == 0 {
		t.Fatal("the schedule's first boards hold no lemon: the check below would mean nothing")
	}
	if got := rows[0].Runs[0].LemonBoards; got < lemons {
		t.Errorf("seed 1 installed %d lemon boards; the schedule's first boards hold %d", got, lemons)
	}
	var out bytes.Buffer
	PrintMonth(&out, m, rows)
	for _, want := range []string{"manual", "gpuheal+feedback", "job interruptions per 1,000 GPU-hours", "jobs finished by their deadline", "lemons retired"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
}

// Zero seeds is an error, not an empty table.
func TestMonthWantsASeed(t *testing.T) {
	if _, err := Month(MonthOptions{Model: jobmodel.Defaults()}); err == nil {
		t.Error("0 seeds accepted")
	}
}
