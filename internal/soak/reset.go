package soak

import (
	"fmt"
	"io"
	"time"

	gpuhealv1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/finding"
)

// gpusPerNode is the simulated fleet's board: a whole-node repair takes
// all of them out of service, a GPU reset only the GPUs it resets.
const gpusPerNode = 8

// inferencePodsPerNode one-GPU pods of the inference service run on each
// node the training jobs leave free, with Options.Inference: a node whose
// GPUs serve several pods, where a partial drain moves fewer pods than a
// whole-node drain.
const inferencePodsPerNode = 4

// ResetFigures are the repairs of the faults a GPU reset repairs (the
// agent's advice reset-gpu), whatever action the policy took for them.
type ResetFigures struct {
	Incidents int            // incidents opened with advice reset-gpu
	Resets    map[string]int // GPU resets by outcome (and reason when failed)
	// RebootsAvoided: incidents repaired by a reset alone.
	RebootsAvoided int
	// TimeToRecover per such incident that ended Succeeded, detection to
	// back in service (real time).
	TimeToRecover []time.Duration
	// PodsEvicted per such incident that ended Succeeded.
	PodsEvicted []int
	// GPUHoursOut: per ended incident, the GPUs it took out of service
	// (the reset GPUs after a partial drain; the whole board otherwise)
	// times detection to its end (real time).
	GPUHoursOut float64
}

// resetFigures reads the incidents; speed scales times back to real time.
func resetFigures(rems []gpuhealv1.NodeRemediation, speed float64) ResetFigures {
	f := ResetFigures{Resets: map[string]int{}}
	for _, rem := range rems {
		if rem.Spec.Trigger.RecommendedAction != string(finding.ActionResetGPU) {
			continue
		}
		f.Incidents++
		g := rem.Status.GPUReset
		if g != nil && g.Outcome != "" && g.Outcome != gpuhealv1.GPUResetRunning {
			key := g.Outcome
			if g.Reason != "" && g.Outcome != gpuhealv1.GPUResetSucceeded {
				key += "/" + g.Reason
			}
			f.Resets[key]++
		}
		if !rem.Status.Phase.Terminal() || len(rem.Status.Phases) == 0 {
			continue
		}
		took := time.Duration(float64(rem.Status.Phases[len(rem.Status.Phases)-1].Time.Sub(rem.Spec.Trigger.Since.Time)) * speed)
		gpus := gpusPerNode
		reset := rem.Status.Action == gpuhealv1.ActionResetGPU && g != nil && g.Outcome == gpuhealv1.GPUResetSucceeded
		if reset && g.PartialDrain {
			gpus = len(g.GPUs)
		}
		f.GPUHoursOut += took.Hours() * float64(gpus)
		if rem.Status.Phase != gpuhealv1.PhaseSucceeded {
			continue
		}
		if reset {
			f.RebootsAvoided++
		}
		f.TimeToRecover = append(f.TimeToRecover, took)
		f.PodsEvicted = append(f.PodsEvicted, len(rem.Status.EvictedPods))
	}
	return f
}

// PrintResetComparison sets the same faults repaired by rebooting and by
// resetting the GPU side by side (docs/reliability.md).
func PrintResetComparison(w io.Writer, reboot, reset *Report) {
	fmt.Fprintf(w, "\nsame fault schedule (seed %d, %d nodes, %s of fleet life); faults a GPU reset repairs (advice reset-gpu):\n",
		reset.Seed, reset.Nodes, time.Duration(float64(reset.Duration)*reset.Speed).Round(time.Minute))
	a, b := reboot.Reset, reset.Reset
	fmt.Fprintf(w, "  %-52s %16s %16s\n", "", "reboot always", "reset the GPU")
	fmt.Fprintf(w, "  %-52s %16d %16d\n", "incidents", a.Incidents, b.Incidents)
	fmt.Fprintf(w, "  %-52s %16d %16d\n", "repaired without a reboot", a.RebootsAvoided, b.RebootsAvoided)
	fmt.Fprintf(w, "  %-52s %16s %16s\n", "detection to back in service, p50", quantile(a.TimeToRecover, 0.5), quantile(b.TimeToRecover, 0.5))
	fmt.Fprintf(w, "  %-52s %16s %16s\n", "detection to back in service, p90", quantile(a.TimeToRecover, 0.9), quantile(b.TimeToRecover, 0.9))
	fmt.Fprintf(w, "  %-52s %16.2f %16.2f\n", "pods evicted per incident, mean", meanInt(a.PodsEvicted), meanInt(b.PodsEvicted))
	fmt.Fprintf(w, "  %-52s %16.2f %16.2f\n", "GPU-hours out of service per incident", perIncident(a), perIncident(b))
	fmt.Fprintf(w, "  %-52s %16.1f %16.1f\n", "GPU-hours lost, whole fleet (nodes out of service)", reboot.GPUHoursLost, reset.GPUHoursLost)
	fmt.Fprintf(w, "  resets: %s\n", orNone(formatCounts(b.Resets)))
}

func meanInt(xs []int) float64 {
	if len(xs) == 0 {
		return 0
	}
	sum := 0
	for _, x := range xs {
		sum += x
	}
	return float64(sum) / float64(len(xs))
}

func perIncident(f ResetFigures) float64 {
	if f.Incidents == 0 {
		return 0
	}
	return f.GPUHoursOut / float64(f.Incidents)
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
