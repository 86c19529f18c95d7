package soak

import (
	"fmt"
	"io"
	"slices"

	"github.com/gpuheal/gpuheal/internal/jobmodel"
	"github.com/gpuheal/gpuheal/internal/simfleet/schedule"
	"github.com/gpuheal/gpuheal/internal/testenv"
)

// MonthOptions runs the job model (internal/jobmodel) on the soak's fleet
// hazard: a month of training jobs at real failure rates, which the live
// soak's compressed hours cannot show.
type MonthOptions struct {
	Model jobmodel.Options
	Seeds int // runs per arm, seeds 1..Seeds
	// Hazard is the boards' heterogeneity, as the live soak's schedule
	// draws it.
	Hazard schedule.Hazard
}

// DefaultMonth is the job model's defaults over three seeds.
func DefaultMonth(h schedule.Hazard) MonthOptions {
	return MonthOptions{Model: jobmodel.Defaults(), Seeds: 3, Hazard: h}
}

// MonthRow is one arm over every seed.
type MonthRow struct {
	Arm  jobmodel.Arm
	Runs []jobmodel.Result
}

// Month runs every arm on every seed. Each seed draws its own fleet of
// boards; the arms of one seed share it and its faults.
func Month(m MonthOptions) ([]MonthRow, error) {
	if m.Seeds < 1 {
		return nil, fmt.Errorf("seeds %d: want at least 1", m.Seeds)
	}
	if err := m.Hazard.Validate(); err != nil {
		return nil, err
	}
	rows := make([]MonthRow, len(jobmodel.Arms))
	for i, arm := range jobmodel.Arms {
		rows[i].Arm = arm
	}
	slots := monthSlots(m.Model.Nodes)
	for seed := int64(1); seed <= int64(m.Seeds); seed++ {
		o := m.Model
		o.Seed = seed
		o.Rate = boardRates(seed, slots, o.FailuresPerNodeHour, m.Hazard)
		for i, arm := range jobmodel.Arms {
			r, err := jobmodel.Run(o, arm)
			if err != nil {
				return nil, err
			}
			rows[i].Runs = append(rows[i].Runs, r)
		}
	}
	return rows, nil
}

// monthSlots names the model's slots as the live soak names its nodes,
// so that a seed draws the same boards in both.
func monthSlots(n int) []string {
	slots := make([]string, n)
	for i := range slots {
		slots[i] = testenv.NodeName(nodePrefix, i)
	}
	return slots
}

// boardRates gives the model the schedule's boards: a board's rate is the
// fleet's base rate times the board's multiple (lemon and covariates),
// the same draw the live soak's fault schedule makes.
func boardRates(seed int64, slots []string, perHour float64, h schedule.Hazard) jobmodel.BoardRate {
	if h.Off() {
		return nil
	}
	type key struct{ slot, board int }
	rates := map[key]schedule.Board{}
	for i, b := range schedule.Boards(seed, slots, schedule.MaxBoards, perHour/60, h) {
		rates[key{i / schedule.MaxBoards, b.Board}] = b
	}
	return func(slot, board int) (float64, bool) {
		b, ok := rates[key{slot, board}]
		if !ok {
			return perHour, false // past the boards drawn: a fresh board
		}
		return perHour * b.Multiple, b.Lemon
	}
}

// PrintMonth is the seed article's table for the model: each arm's mean
// over the seeds, with the lowest and highest in brackets.
func PrintMonth(w io.Writer, m MonthOptions, rows []MonthRow) {
	o := m.Model
	fmt.Fprintf(w, "\na month of training jobs at real failure rates (job model, docs/reliability.md): %d nodes, %g days, seeds 1-%d, lemons %.0f%% at %g×\n",
		o.Nodes, o.Days, m.Seeds, 100*m.Hazard.LemonShare, m.Hazard.LemonMultiple)
	fmt.Fprintf(w, "repair: operator %s + replacement %s; gpuheal detection %s + reboot %s\n", o.OperatorDelay, o.Replace, o.Detect, o.Reboot)
	fmt.Fprintf(w, "  %-44s", "")
	for _, r := range rows {
		fmt.Fprintf(w, " %26s", r.Arm)
	}
	fmt.Fprintln(w)
	line := func(name string, f func(*jobmodel.Result) float64, format string) {
		fmt.Fprintf(w, "  %-44s", name)
		for _, r := range rows {
			vals := make([]float64, len(r.Runs))
			sum := 0.0
			for i := range r.Runs {
				vals[i] = f(&r.Runs[i])
				sum += vals[i]
			}
			cell := fmt.Sprintf(format, sum/float64(len(vals))) + " [" + fmt.Sprintf(format, slices.Min(vals)) + "–" + fmt.Sprintf(format, slices.Max(vals)) + "]"
			fmt.Fprintf(w, " %26s", cell)
		}
		fmt.Fprintln(w)
	}
	line("mean time to recover (minutes)", func(r *jobmodel.Result) float64 { return r.MeanTimeToRecover().Minutes() }, "%.1f")
	line("job interruptions per 1,000 GPU-hours", (*jobmodel.Result).FailureRate, "%.3f")
	line("jobs finished by their deadline (%)", func(r *jobmodel.Result) float64 { return 100 * r.SLA() }, "%.1f")
	line("GPU-hours of lost work, a month", func(r *jobmodel.Result) float64 { return r.LostGPUHours() * 30 / r.Days }, "%.0f")
	line("cost of the lost work, a month ($)", (*jobmodel.Result).CostPerMonth, "%.0f")
	line("GPU-hours of nodes down, a month", func(r *jobmodel.Result) float64 { return r.DownGPUHours() * 30 / r.Days }, "%.0f")
	line("faults (the arms' repairs change later boards)", func(r *jobmodel.Result) float64 { return float64(r.Faults) }, "%.0f")
	line("lemons retired by the rule", func(r *jobmodel.Result) float64 { return float64(r.LemonsRetired) }, "%.0f")
}
