package soak

import (
	"encoding/json"
	"os"

	"github.com/gpuheal/gpuheal/internal/simfleet/schedule"
)

// boardsFile, in the work directory, lists the boards the schedule drew
// faults for: which were lemons and each one's rate.
const boardsFile = "boards.jsonl"

// drawSchedule draws the run's faults: per board when the fleet has
// lemons or covariates, else as the homogeneous fleet always was.
func drawSchedule(o Options, slots []string, perMinute float64) []schedule.ScheduledFault {
	if o.Hazard.Off() {
		return schedule.DrawSchedule(o.Seed, slots, 8, perMinute, o.Duration)
	}
	return schedule.DrawBoardSchedule(o.Seed, slots, 8, perMinute, o.Duration, o.Hazard)
}

// writeBoards keeps every board of every slot up to the last generation
// the schedule has faults for (nothing for a homogeneous fleet).
func writeBoards(path string, o Options, slots []string, perMinute float64, faults []schedule.ScheduledFault) error {
	if o.Hazard.Off() {
		return nil
	}
	boards := 1
	for _, f := range faults {
		boards = max(boards, f.Board+1)
	}
	file, err := os.Create(path)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(file)
	for _, b := range schedule.Boards(o.Seed, slots, boards, perMinute, o.Hazard) {
		if err := enc.Encode(b); err != nil {
			_ = file.Close()
			return err
		}
	}
	return file.Close()
}
