package soak

import (
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"time"

	gpuhealv1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/simfleet/schedule"
)

// latentClass is the latent fault the soak plants: the gate's NCCL check
// finds it; the agent's passive signals do not.
const latentClass = "latent-nccl-bandwidth"

// latentCarrier is the class of fault a planted latent one rides along
// with: a GPU that fell off the bus, which a reboot clears, so that without
// the gate the node goes back to work with the latent fault still there.
const latentCarrier = "faulty-gpu"

// repeatWindow is how soon after a repair a node's next failure from the
// same latent fault counts as a repeat (fleet time).
const repeatWindow = time.Hour

// plantLatent gives a share of the schedule's carrier faults a latent
// fault on the same GPU a second before, drawn from seed: the same seed
// plants the same ones, so the gate-off and gate-on runs see one world.
func plantLatent(faults []schedule.ScheduledFault, share float64, seed int64) []schedule.ScheduledFault {
	if share <= 0 {
		return faults
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 0x1a7e)) //nolint:gosec // a reproducible simulation
	out := make([]schedule.ScheduledFault, 0, len(faults))
	for _, f := range faults {
		if f.Class == latentCarrier && rng.Float64() < share {
			out = append(out, schedule.ScheduledFault{At: max(f.At-time.Second, 0), Slot: f.Slot, Class: latentClass, GPU: f.GPU, Board: f.Board, Pinned: f.Pinned})
		}
		out = append(out, f)
	}
	return out
}

// GateFigures are what the health gate changes, measured in one run.
type GateFigures struct {
	LatentPlanted int // latent faults injected
	// ReturnedWithLatent are nodes with a latent fault that a repair put
	// back to work (a reboot that "healed" them), whether or not a
	// workload later brought the fault up.
	ReturnedWithLatent int
	// Repeats are failures from a latent fault within repeatWindow of
	// the node's last repair; PodsOnRepeats the workload pods placed on
	// such a node between that repair and the failure.
	Repeats, PodsOnRepeats int
	Checks                 map[string]int // finished checks by kind and outcome
	// FalseFailures are checks that failed or erred on a node without a
	// latent fault.
	FalseFailures []string
}

// placement is where and when the sampler first saw a pod on a node.
type placement struct {
	node string
	at   time.Time
}

// gateFigures reads the journal, the incidents and the pods' placements.
func gateFigures(injections []schedule.Injection, rems []gpuhealv1.NodeRemediation, placed map[string]placement, speed float64) GateFigures {
	g := GateFigures{Checks: map[string]int{}}
	latentNodes := map[string]bool{}
	returned := map[string]bool{}
	for _, in := range injections {
		if in.Class == latentClass && in.Skipped == "" {
			g.LatentPlanted++
			latentNodes[in.Node] = true
			if repairedAfter(rems, in.Node, in.Time) {
				returned[in.Node] = true
			}
		}
	}
	g.ReturnedWithLatent = len(returned)
	window := time.Duration(float64(repeatWindow) / speed)
	for _, in := range injections {
		if in.Class != schedule.ClassSurfaced || in.Skipped != "" {
			continue
		}
		repaired, ok := lastRepairBefore(rems, in.Node, in.Time)
		if !ok || in.Time.Sub(repaired) > window {
			continue
		}
		g.Repeats++
		for _, p := range placed {
			if p.node == in.Node && !p.at.Before(repaired) && p.at.Before(in.Time) {
				g.PodsOnRepeats++
			}
		}
	}
	for _, rem := range rems {
		for _, c := range rem.Status.Validation {
			if c.Outcome == "" {
				continue
			}
			g.Checks[string(c.Kind)+" "+string(c.Outcome)]++
			if c.Outcome != gpuhealv1.CheckPassed && !latentNodes[c.Node] {
				g.FalseFailures = append(g.FalseFailures, fmt.Sprintf("%s on %s: %s %s", c.Name, c.Node, c.Outcome, c.Message))
			}
		}
	}
	return g
}

// repairedAfter says whether an incident of the node that ended after t
// put the node itself back to work (Succeeded, not replaced).
func repairedAfter(rems []gpuhealv1.NodeRemediation, node string, t time.Time) bool {
	for _, rem := range rems {
		if rem.Spec.NodeName == node && rem.Status.Phase == gpuhealv1.PhaseSucceeded && rem.Status.Replacement == "" &&
			len(rem.Status.Phases) > 0 && rem.Status.Phases[len(rem.Status.Phases)-1].Time.After(t) {
			return true
		}
	}
	return false
}

// lastRepairBefore is when the node's latest incident that ended before t
// ended Succeeded, the moment it went back to work.
func lastRepairBefore(rems []gpuhealv1.NodeRemediation, node string, t time.Time) (time.Time, bool) {
	var best time.Time
	for _, rem := range rems {
		if rem.Spec.NodeName != node || rem.Status.Phase != gpuhealv1.PhaseSucceeded || rem.Status.Replacement != "" || len(rem.Status.Phases) == 0 {
			continue
		}
		if end := rem.Status.Phases[len(rem.Status.Phases)-1].Time.Time; end.Before(t) && end.After(best) {
			best = end
		}
	}
	return best, !best.IsZero()
}

// PrintGateComparison sets the same faults without and with the gate side
// by side (docs/reliability.md).
func PrintGateComparison(w io.Writer, off, on *Report) {
	fmt.Fprintf(w, "\nsame fault schedule (seed %d, %d nodes, %s of fleet life), %d latent faults planted:\n", on.Seed, on.Nodes,
		time.Duration(float64(on.Duration)*on.Speed).Round(time.Minute), on.Gate.LatentPlanted)
	fmt.Fprintf(w, "  %-58s %14s %14s\n", "", "gate off", "gate on")
	fmt.Fprintf(w, "  %-58s %14d %14d\n", "nodes put back to work with their latent fault", off.Gate.ReturnedWithLatent, on.Gate.ReturnedWithLatent)
	fmt.Fprintf(w, "  %-58s %14d %14d\n", "failures again within 1h from the same latent fault", off.Gate.Repeats, on.Gate.Repeats)
	fmt.Fprintf(w, "  %-58s %14d %14d\n", "workload pods placed on those nodes before they failed", off.Gate.PodsOnRepeats, on.Gate.PodsOnRepeats)
	fmt.Fprintf(w, "  %-58s %14s %14s\n", "time to recover per incident, p50", quantile(off.TimeToRecover, 0.5), quantile(on.TimeToRecover, 0.5))
	fmt.Fprintf(w, "  %-58s %14s %14s\n", "time to recover per incident, p90", quantile(off.TimeToRecover, 0.9), quantile(on.TimeToRecover, 0.9))
	fmt.Fprintf(w, "  %-58s %14.1f %14.1f\n", "GPU-hours lost", off.GPUHoursLost, on.GPUHoursLost)
	fmt.Fprintf(w, "  %-58s %14s %14d\n", "checks failed on a node without a latent fault", "-", len(on.Gate.FalseFailures))
	fmt.Fprintf(w, "  checks run with the gate: %s\n", formatCounts(on.Gate.Checks))
}

func quantile(ds []time.Duration, p float64) string {
	if len(ds) == 0 {
		return "-"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(p*float64(len(s))))].Round(time.Second).String()
}
