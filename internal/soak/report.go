package soak

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	gpuhealv1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/procs"
	"github.com/gpuheal/gpuheal/internal/simfleet/schedule"
)

// NodeHourPrice is the on-demand price of an 8-GPU p4d.24xlarge, the
// seed article's figure.
const NodeHourPrice = 32.77

// Report is what a soak run measured and whether the invariants held.
type Report struct {
	Mode     Mode
	Nodes    int
	Duration time.Duration
	Speed    float64
	Seed     int64

	FaultsScheduled, FaultsInjected, FatalInjected, FaultsSkipped int
	// FaultsOtherBoard were drawn for a board not in its slot at the
	// time (one a repair had replaced, or one not yet installed).
	FaultsOtherBoard int
	Remediations     map[string]int // by final phase
	Outcomes         map[string]int // per fatal fault
	Chaos            map[string]int
	CrashRestarts    map[string]int // exits on their own, restarted
	APIOutage        time.Duration
	ChaosEvents      []string
	Settled          bool
	Invariants       []Invariant

	// Times are real time (scaled back by Speed).
	TimeToRecover []time.Duration // per completed incident, detection to healthy
	SlotOutages   []time.Duration // per fleet slot, out of service until back
	GPUHoursLost  float64
	PodsSeen      int
	PodsHit       int // ran on a node whose GPU or kernel broke
	MaxInFlight   int
	Samples, Miss int
	Gate          GateFigures
	Reset         ResetFigures
	// LemonsRetired: incidents the lemon rule turned into a replacement
	// or quarantine.
	LemonsRetired int
	NoFeedback    bool
}

// Failed reports whether any invariant broke.
func (r *Report) Failed() bool {
	for _, inv := range r.Invariants {
		if !inv.OK {
			return true
		}
	}
	return false
}

// MeanTimeToRecover over the slot outages (the same measure in both modes).
func (r *Report) MeanTimeToRecover() time.Duration {
	if len(r.SlotOutages) == 0 {
		return 0
	}
	var sum time.Duration
	for _, d := range r.SlotOutages {
		sum += d
	}
	return sum / time.Duration(len(r.SlotOutages))
}

// LostCost is the price of the GPU-hours lost.
func (r *Report) LostCost() float64 { return r.GPUHoursLost / 8 * NodeHourPrice }

// UninterruptedShare is the share of workload pods no broken GPU hit.
func (r *Report) UninterruptedShare() float64 {
	if r.PodsSeen == 0 {
		return 1
	}
	return 1 - float64(r.PodsHit)/float64(r.PodsSeen)
}

func (r *run) report(ctx context.Context, s *sampler, chaos *chaosMonkey, settled bool, scheduled int) (*Report, error) {
	// Stop the controllers first: their buffered audit records are
	// written out on the way down.
	r.mu.Lock()
	ctrls := []*procs.Process{r.controllers[0], r.controllers[1]}
	r.stopping = true
	crashes := r.crashRestarts
	r.mu.Unlock()
	if err := procs.StopAll(ctrls, 30*time.Second); err != nil {
		r.log.Warn("soak: stopping controllers", "err", err)
	}
	rep := &Report{Mode: r.opts.Mode, Nodes: r.opts.Nodes, Duration: r.opts.Duration, Speed: r.opts.Speed, Seed: r.opts.Seed,
		FaultsScheduled: scheduled, Settled: settled, Remediations: map[string]int{}, CrashRestarts: crashes}
	injections, err := schedule.ReadInjections(r.simFleetDir())
	if err != nil {
		return nil, fmt.Errorf("reading the injection journal: %w", err)
	}
	for _, in := range injections {
		if in.Skipped != "" {
			if strings.HasPrefix(in.Skipped, "the fault is for board ") {
				rep.FaultsOtherBoard++
			} else {
				rep.FaultsSkipped++
			}
			continue
		}
		rep.FaultsInjected++
		if in.Fatal {
			rep.FatalInjected++
		}
	}
	var nodes corev1.NodeList
	var rems gpuhealv1.NodeRemediationList
	if err := r.c.List(ctx, &nodes); err != nil {
		return nil, err
	}
	if err := r.c.List(ctx, &rems); err != nil {
		return nil, err
	}
	scale := func(d time.Duration) time.Duration { return time.Duration(float64(d) * r.opts.Speed) }
	rep.NoFeedback = r.opts.NoFeedback
	for _, rem := range rems.Items {
		rep.Remediations[string(rem.Status.Phase)]++
		if slices.ContainsFunc(rem.Status.Phases, func(p gpuhealv1.PhaseTransition) bool { return strings.Contains(p.Message, "lemon: ") }) {
			rep.LemonsRetired++
		}
		if rem.Status.Phase == gpuhealv1.PhaseSucceeded && len(rem.Status.Phases) > 0 {
			end := rem.Status.Phases[len(rem.Status.Phases)-1].Time.Time
			rep.TimeToRecover = append(rep.TimeToRecover, scale(end.Sub(rem.Spec.Trigger.Since.Time)))
		}
	}
	s.mu.Lock()
	for _, d := range s.outages {
		rep.SlotOutages = append(rep.SlotOutages, scale(d))
	}
	rep.GPUHoursLost = scale(s.lostNodeTime).Hours() * 8
	rep.PodsSeen, rep.PodsHit = len(s.podsSeen), len(s.podsHit)
	rep.MaxInFlight, rep.Samples, rep.Miss = s.maxActive, s.samples, s.miss
	overflows, open, margin, pdbSeen, fps := s.overflows, s.breakerOpen, s.pdbMargin, s.pdbSeen, s.footprints
	rep.Gate = gateFigures(injections, rems.Items, s.placed, r.opts.Speed)
	rep.Reset = resetFigures(rems.Items, r.opts.Speed)
	s.mu.Unlock()
	if chaos != nil {
		chaos.mu.Lock()
		rep.Chaos, rep.APIOutage, rep.ChaosEvents = chaos.counts, chaos.outage, chaos.events
		chaos.mu.Unlock()
	}

	if r.opts.Mode == Live {
		inv, outcomes := faultsRemediatedOnce(injections, rems.Items)
		rep.Outcomes = outcomes
		rep.Invariants = append(rep.Invariants, inv, noStrayCordons(nodes.Items, rems.Items))
		pdb, err := podsRemovedByGPUHeal(r.apiAudit, margin, pdbSeen)
		if err != nil {
			return nil, fmt.Errorf("reading the API server's audit log: %w", err)
		}
		rep.Invariants = append(rep.Invariants, pdb)
		par := Invariant{Name: "never more remediations in flight than maxParallel", OK: len(overflows) == 0,
			Detail: fmt.Sprintf("most in flight %d, maxParallel %d", s.maxActive, r.opts.maxParallel())}
		if len(overflows) > 0 {
			par.Detail += ": " + strings.Join(overflows[:min(5, len(overflows))], "; ")
		}
		rep.Invariants = append(rep.Invariants, par, noAdmissionWhileBreakerOpen(rems.Items, open, 2*s.every))
		aud, err := auditComplete(ctx, r.auditDB(), rems.Items)
		if err != nil {
			return nil, fmt.Errorf("reading the audit log: %w", err)
		}
		rep.Invariants = append(rep.Invariants, aud)
	}
	rep.Invariants = append(rep.Invariants, noGrowth(fps))
	if err := writeFootprints(filepath.Join(r.workDir, "footprints.jsonl"), fps); err != nil {
		return nil, err
	}
	return rep, nil
}

// writeFootprints keeps every process sample for a look after the run (a
// life over the growth bound: did it climb, or spike once?).
func writeFootprints(path string, fps map[int]*footprint) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("writing process samples: %w", err)
	}
	enc := json.NewEncoder(f)
	for pid, fp := range fps {
		for _, s := range fp.samples {
			line := struct {
				PID    int    `json:"pid"`
				Name   string `json:"name"`
				Leader bool   `json:"leader"`
				processSample
			}{pid, fp.name, fp.leader, s}
			if err := enc.Encode(line); err != nil {
				_ = f.Close()
				return fmt.Errorf("writing process samples to %s: %w", path, err)
			}
		}
	}
	return f.Close()
}

// Print writes the report for people.
func (r *Report) Print(w io.Writer) {
	fmt.Fprintf(w, "gpuheal soak: %s, %d nodes, %s at speed %g (%s of fleet life), seed %d\n",
		r.Mode, r.Nodes, r.Duration, r.Speed, time.Duration(float64(r.Duration)*r.Speed).Round(time.Minute), r.Seed)
	fmt.Fprintf(w, "faults: %d scheduled, %d injected (%d fatal), %d skipped (slot down or already broken), %d for a board not in place\n",
		r.FaultsScheduled, r.FaultsInjected, r.FatalInjected, r.FaultsSkipped, r.FaultsOtherBoard)
	if len(r.Remediations) > 0 {
		fmt.Fprintf(w, "remediations by outcome: %s; most in flight at once: %d\n", formatCounts(r.Remediations), r.MaxInFlight)
	}
	if len(r.Chaos) > 0 {
		fmt.Fprintf(w, "chaos survived: %s; API server unresponsive %s in all\n", formatCounts(r.Chaos), r.APIOutage.Round(time.Second))
	}
	if len(r.CrashRestarts) > 0 {
		fmt.Fprintf(w, "processes that exited on their own and were restarted (a controller that loses its leader Lease exits): %s\n", formatCounts(r.CrashRestarts))
	}
	fmt.Fprintf(w, "cluster samples: %d (%d missed while the API server was away); settled after the faults: %v\n", r.Samples, r.Miss, r.Settled)
	if len(r.TimeToRecover) > 0 {
		fmt.Fprintf(w, "time to recover per incident (real time): %s\n", distribution(r.TimeToRecover))
	}
	fmt.Fprintf(w, "slot outages (real time): %s\n", distribution(r.SlotOutages))
	fmt.Fprintf(w, "GPU-hours lost: %.1f ($%.0f at $%.2f per 8-GPU node-hour); workload pods hit by a broken GPU: %d of %d\n",
		r.GPUHoursLost, r.LostCost(), NodeHourPrice, r.PodsHit, r.PodsSeen)
	if g := r.Gate; g.LatentPlanted > 0 || len(g.Checks) > 0 {
		fmt.Fprintf(w, "health gate: %d latent faults planted, %d nodes put back to work with one; %d failures again within 1h from one, %d workload pods placed on those nodes; checks %s; %d failed on a node without a latent fault\n",
			g.LatentPlanted, g.ReturnedWithLatent, g.Repeats, g.PodsOnRepeats, formatCounts(g.Checks), len(g.FalseFailures))
		for _, f := range g.FalseFailures[:min(5, len(g.FalseFailures))] {
			fmt.Fprintf(w, "  %s\n", f)
		}
	}
	if g := r.Reset; g.Incidents > 0 {
		fmt.Fprintf(w, "faults a GPU reset repairs: %d incidents, %d repaired without a reboot; resets %s; detection to back in service %s\n",
			g.Incidents, g.RebootsAvoided, orNone(formatCounts(g.Resets)), distribution(g.TimeToRecover))
	}
	fmt.Fprintln(w, "invariants:")
	for _, inv := range r.Invariants {
		mark := "PASS"
		if !inv.OK {
			mark = "FAIL"
		}
		fmt.Fprintf(w, "  %s  %s\n        %s\n", mark, inv.Name, inv.Detail)
	}
}

// PrintComparison is the seed article's table: the same faults, repaired
// by hand, by gpuheal without its feedback loop and by gpuheal with it
// (any of them may be nil, and is left out).
func PrintComparison(w io.Writer, arms ...*Report) {
	var reps []*Report
	for _, r := range arms {
		if r != nil {
			reps = append(reps, r)
		}
	}
	if len(reps) == 0 {
		return
	}
	first := reps[0]
	fmt.Fprintf(w, "\nsame fault schedule (seed %d, %d nodes, %s of fleet life):\n", first.Seed, first.Nodes,
		time.Duration(float64(first.Duration)*first.Speed).Round(time.Minute))
	row := func(name string, cell func(*Report) string) {
		fmt.Fprintf(w, "  %-46s", name)
		for _, r := range reps {
			fmt.Fprintf(w, " %18s", cell(r))
		}
		fmt.Fprintln(w)
	}
	row("", func(r *Report) string {
		switch {
		case r.Mode == Manual:
			return "manual (15 min)"
		case r.NoFeedback:
			return "gpuheal"
		}
		return "gpuheal+feedback"
	})
	row("faults injected (fatal)", func(r *Report) string { return fmt.Sprintf("%d (%d)", r.FaultsInjected, r.FatalInjected) })
	row("mean time to recover (slot back in service)", func(r *Report) string { return r.MeanTimeToRecover().Round(time.Second).String() })
	row("GPU-hours lost (unhealthy, cordoned or down)", func(r *Report) string { return fmt.Sprintf("%.1f", r.GPUHoursLost) })
	row("workload pods no broken GPU hit", func(r *Report) string { return fmt.Sprintf("%.1f%%", 100*r.UninterruptedShare()) })
	row("cost of lost GPU-hours ($32.77/node-hour)", func(r *Report) string { return fmt.Sprintf("$%.0f", r.LostCost()) })
	row("lemons retired (replaced, not rebooted)", func(r *Report) string { return fmt.Sprint(r.LemonsRetired) })
}

func distribution(ds []time.Duration) string {
	if len(ds) == 0 {
		return "none"
	}
	return fmt.Sprintf("n=%d p50 %s p90 %s p99 %s max %s", len(ds), quantile(ds, 0.5), quantile(ds, 0.9), quantile(ds, 0.99), quantile(ds, 1))
}

func formatCounts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}
