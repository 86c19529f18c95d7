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
	var compare, gateCompare, resetCompare, noChaos bool
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

--compare runs the same fault schedule twice without chaos, once repaired by a
simulated operator 15 minutes after each alert and once by gpuheal, and prints
the two side by side.

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
			if n := countTrue(compare, gateCompare, resetCompare); n > 1 {
				return errors.New("--compare, --gate-compare and --reset-compare: choose one")
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
			manual := o
			manual.Mode = soak.Manual
			if manual.WorkDir != "" {
				manual.WorkDir += "/manual"
				o.WorkDir += "/live"
			}
			mrep, err := soak.Run(cmd.Context(), manual)
			if err != nil {
				return err
			}
			mrep.Print(out)
			lrep, err := soak.Run(cmd.Context(), o)
			if err != nil {
				return err
			}
			lrep.Print(out)
			soak.PrintComparison(out, mrep, lrep)
			if lrep.Failed() {
				return errors.New("soak: an invariant broke (see FAIL above)")
			}
			return nil
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
	f.BoolVar(&compare, "compare", false, "run the schedule with a manual operator and with gpuheal, without chaos, and compare")
	f.StringVar(&o.BinDir, "bin-dir", "", "control plane binaries (default: $GPUHEAL_BIN_DIR or <repo>/bin)")
	f.StringVar(&o.WorkDir, "work-dir", "", "keep logs, audit logs and journals here (default: a temporary directory)")
	return cmd
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
