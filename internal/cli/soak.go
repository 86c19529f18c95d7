package cli

import (
	"errors"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpuheal/gpuheal/internal/simfleet/schedule"
	"github.com/gpuheal/gpuheal/internal/soak"
	"github.com/gpuheal/gpuheal/internal/testenv"
)

func newSoakCommand(out io.Writer) *cobra.Command {
	o := soak.Options{Mode: soak.Live}
	var compare, gateCompare, resetCompare, noChaos, monthOnly bool
	month := soak.DefaultMonth(schedule.DefaultHazard())
	cmd := &cobra.Command{
		Use:   "soak [--nodes 200] [--duration 1h] [--speed 1] [--compare | --gate-compare]",
		Short: "Simulated fleet life under chaos; checks gpuheal's invariants",
		Long: `Runs the real control plane with kwok nodes, training workloads with
PodDisruptionBudgets, the sim fleet with faults drawn from the published
failure mix, and two gpuheal-controller replicas with leader election, for
--duration, while a chaos schedule kills controllers, restarts agents, makes
the API server unresponsive, fails and throttles the provider, fills the audit
disk and writes garbage into kernel logs. Then it checks and prints the
invariants (docs/reliability.md) and exits 1 when one broke.

--compare runs the same fault schedule three times without chaos: repaired by
a simulated operator 15 minutes after each alert, by gpuheal without its
feedback loop (no lemon rule, no tier taint or affinity), and by gpuheal with
it, and prints the three side by side. Then it runs the job model on the same
fleet hazard: a month of training jobs at real failure rates in each arm,
over --month-seeds seeds (job interruptions per 1,000 GPU-hours, jobs finished by their deadline,
GPU-hours of lost work, cost). --month runs the model alone, without a
cluster, in seconds.

--gate-compare runs the same fault schedule twice with gpuheal and without
chaos, without and with the health gate (the agent's checks and an NCCL
all-reduce), while --latent-share of the GPUs that fall off the bus also
carry a latent NCCL fault that a reboot keeps; it prints how often a repaired
node failed again from it, and what the gate cost.

--reset-compare runs the same fault schedule twice with gpuheal and without
chaos, with an inference service of one-GPU pods on every other node training
leaves free: first with the agent's advice reset-gpu mapped to a reboot,
then resetting the faulty GPU alone after a partial drain; it prints, for
the faults a reset repairs, the time back in service, the pods evicted and
the GPU-hours out of service per incident both ways.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Chaos = !noChaos && !compare && !gateCompare && !resetCompare
			if n := countTrue(compare, gateCompare, resetCompare, monthOnly); n > 1 {
				return errors.New("--compare, --gate-compare, --reset-compare and --month: choose one")
			}
			month.Hazard = o.Hazard
			if monthOnly {
				return printMonth(out, month)
			}
			o.Out, o.Log = out, logger()
			if o.BinDir == "" {
				dir, err := testenv.BinDir()
				if err != nil {
					return err
				}
				o.BinDir = dir
			}
			own, err := gpuhealBinDir(o.BinDir)
			if err != nil {
				return err
			}
			o.OwnBinDir = own
			if gateCompare {
				return runGateCompare(cmd, out, o)
			}
			if resetCompare {
				return runResetCompare(cmd, out, o)
			}
			if !compare {
				rep, err := soak.Run(cmd.Context(), o)
				if err != nil {
					return err
				}
				rep.Print(out)
				if rep.Failed() {
					return errors.New("soak: an invariant broke (see FAIL above)")
				}
				return nil
			}
			return runCompare(cmd, out, o, month)
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.Nodes, "nodes", 200, "fake GPU nodes")
	f.DurationVar(&o.Duration, "duration", time.Hour, "how long faults (and chaos) go on")
	f.Float64Var(&o.Speed, "speed", 1, "time compression: fault rate up, boot, hold and operator times down")
	f.Int64Var(&o.Seed, "seed", 1, "seed of the fault schedule and the chaos")
	f.Float64Var(&o.FaultsPerMinute, "faults-per-minute", 0, "fleet-wide fault rate at speed 1 (default: one per 100 nodes)")
	f.DurationVar(&o.Quiesce, "quiesce", 0, "longest wait after the faults for incidents to end (default 3m + 5m/speed)")
	f.BoolVar(&noChaos, "no-chaos", false, "faults only, no chaos")
	f.BoolVar(&o.Gate, "gate", false, "the policy has the health gate (agent checks, NCCL all-reduce)")
	f.Float64Var(&o.Hazard.LemonShare, "lemon-share", schedule.DefaultHazard().LemonShare, "share of boards that are lemons (0 with the covariates off: the homogeneous fleet, drawn as before; docs/reliability.md)")
	f.Float64Var(&o.Hazard.LemonMultiple, "lemon-multiple", schedule.DefaultHazard().LemonMultiple, "a lemon's failure rate over a normal board's")
	f.Float64Var(&o.LatentShare, "latent-share", 0, "share of the GPUs that fall off the bus that also carry a latent NCCL fault (default 0; 0.3 with --gate-compare)")
	f.BoolVar(&gateCompare, "gate-compare", false, "run the schedule with gpuheal without and with the health gate, without chaos, and compare")
	f.BoolVar(&resetCompare, "reset-compare", false, "run the schedule with gpuheal rebooting and resetting the GPU for faults a reset repairs, without chaos, and compare")
	f.BoolVar(&o.RebootNotReset, "reboot-not-reset", false, "map the agent's advice reset-gpu to a reboot (the baseline of --reset-compare)")
	f.BoolVar(&o.Inference, "inference", false, "run an inference service of one-GPU pods on every other node training leaves free")
	f.BoolVar(&compare, "compare", false, "run the schedule with a manual operator, gpuheal without and with its feedback loop, without chaos, compare, then run the job model")
	f.BoolVar(&monthOnly, "month", false, "run only the job model: a month of training jobs at real failure rates in each arm (no cluster)")
	f.IntVar(&month.Seeds, "month-seeds", month.Seeds, "seeds of the job model, each a fleet of its own")
	f.IntVar(&month.Model.Nodes, "month-nodes", month.Model.Nodes, "nodes of the job model's fleet")
	f.Float64Var(&month.Model.Days, "month-days", month.Model.Days, "days of the job model")
	f.StringVar(&o.BinDir, "bin-dir", "", "control plane binaries (default: $GPUHEAL_BIN_DIR or <repo>/bin)")
	f.StringVar(&o.WorkDir, "work-dir", "", "keep logs, audit logs and journals here (default: a temporary directory)")
	return cmd
}

// runCompare runs one schedule with a manual operator, gpuheal without
// and with its feedback loop, prints the three, then the job model. The
// model keeps its own repair times: the live arms' come from the soak's
// simulated boot and reboot delays, not from machines.
func runCompare(cmd *cobra.Command, out io.Writer, o soak.Options, month soak.MonthOptions) error {
	manual, plain, loop := o, o, o
	manual.Mode, plain.NoFeedback = soak.Manual, true
	if o.WorkDir != "" {
		manual.WorkDir, plain.WorkDir, loop.WorkDir = o.WorkDir+"/manual", o.WorkDir+"/no-feedback", o.WorkDir+"/feedback"
	}
	var reps []*soak.Report
	for _, run := range []soak.Options{manual, plain, loop} {
		rep, err := soak.Run(cmd.Context(), run)
		if err != nil {
			return err
		}
		rep.Print(out)
		reps = append(reps, rep)
	}
	soak.PrintComparison(out, reps...)
	if err := printMonth(out, month); err != nil {
		return err
	}
	if reps[1].Failed() || reps[2].Failed() {
		return errors.New("soak: an invariant broke (see FAIL above)")
	}
	return nil
}

func printMonth(out io.Writer, month soak.MonthOptions) error {
	rows, err := soak.Month(month)
	if err != nil {
		return err
	}
	soak.PrintMonth(out, month, rows)
	return nil
}

// runResetCompare runs one schedule with gpuheal rebooting, then
// resetting the GPU, for the faults a reset repairs, and prints both and
// the comparison.
func runResetCompare(cmd *cobra.Command, out io.Writer, o soak.Options) error {
	o.Inference = true
	reboot, reset := o, o
	reboot.RebootNotReset, reset.RebootNotReset = true, false
	if o.WorkDir != "" {
		reboot.WorkDir, reset.WorkDir = o.WorkDir+"/reboot", o.WorkDir+"/reset"
	}
	var reps []*soak.Report
	for _, run := range []soak.Options{reboot, reset} {
		rep, err := soak.Run(cmd.Context(), run)
		if err != nil {
			return err
		}
		rep.Print(out)
		reps = append(reps, rep)
	}
	soak.PrintResetComparison(out, reps[0], reps[1])
	if reps[0].Failed() || reps[1].Failed() {
		return errors.New("soak: an invariant broke (see FAIL above)")
	}
	return nil
}

func countTrue(bs ...bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

// runGateCompare runs one schedule with gpuheal without and with the
// health gate and prints both and the comparison.
func runGateCompare(cmd *cobra.Command, out io.Writer, o soak.Options) error {
	if !cmd.Flags().Changed("latent-share") {
		o.LatentShare = 0.3
	}
	off, on := o, o
	off.Gate, on.Gate = false, true
	if o.WorkDir != "" {
		off.WorkDir, on.WorkDir = o.WorkDir+"/gate-off", o.WorkDir+"/gate-on"
	}
	var reps []*soak.Report
	for _, run := range []soak.Options{off, on} {
		rep, err := soak.Run(cmd.Context(), run)
		if err != nil {
			return err
		}
		rep.Print(out)
		reps = append(reps, rep)
	}
	soak.PrintGateComparison(out, reps[0], reps[1])
	if reps[0].Failed() || reps[1].Failed() {
		return errors.New("soak: an invariant broke (see FAIL above)")
	}
	return nil
}
