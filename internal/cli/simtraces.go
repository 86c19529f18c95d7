package cli

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpuheal/gpuheal/internal/fleetsim"
)

type simTracesOptions struct {
	gpus        int
	days        float64
	seed        uint64
	preset      string
	failureRate float64
	benignScale float64
	out         string
}

// newSimCommand is `gpuheal sim`: simulated fleets.
func newSimCommand(out io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "Simulated GPU fleets",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newSimTracesCommand(out))
	return cmd
}

func newSimTracesCommand(out io.Writer) *cobra.Command {
	o := &simTracesOptions{}
	cmd := &cobra.Command{
		Use:   "traces --gpus N --days D --seed S --out DIR",
		Short: "Write labelled telemetry traces of a simulated fleet",
		Long: `Simulates a fleet's per-GPU telemetry at a 30 s interval — the fields the agent
exports — with failures drawn from published rates and mix (preset "fleet":
0.12 per 1,000 GPU-hours; "llama3": 0.020), stochastic precursors, failures
with no precursor, and healthy GPUs that show the same signals and never fail.
Writes one compact binary file per GPU and manifest.json with the labels into
DIR. The same flags always give the same bytes. See docs/predictor.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.out == "" {
				return fmt.Errorf("--out: required")
			}
			p, err := fleetsim.LookupPreset(o.preset)
			if err != nil {
				return fmt.Errorf("--preset: %w", err)
			}
			p.BenignScale = o.benignScale
			start := time.Now()
			m, err := fleetsim.Write(cmd.Context(), o.out, fleetsim.Options{
				GPUs: o.gpus, Days: o.days, Seed: o.seed, Preset: p, FailureRate: o.failureRate,
			})
			if err != nil {
				return err
			}
			gpuDays := float64(m.GPUs) * m.Days
			logger().Info("wrote traces", "dir", o.out, "seconds", time.Since(start).Seconds())
			_, err = fmt.Fprintf(out, "%s: %d GPUs × %g days, seed %d, preset %s (%.3g failures per 1,000 GPU-hours)\n"+
				"%d failures, %d benign episodes; %d bytes, %.0f bytes per GPU-day\n",
				o.out, m.GPUs, m.Days, m.Seed, strings.TrimSpace(m.Preset), m.FailuresPer1000GPUHours,
				len(m.Failures), len(m.Episodes), m.Bytes, float64(m.Bytes)/gpuDays)
			return err
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.gpus, "gpus", 1000, "GPU slots in the fleet")
	f.Float64Var(&o.days, "days", 30, "days of telemetry")
	f.Uint64Var(&o.seed, "seed", 1, "random seed; traces for evaluation must use seeds never used in training")
	f.StringVar(&o.preset, "preset", "fleet", "failure rate and mix: "+strings.Join(fleetsim.PresetNames(), " or "))
	f.Float64Var(&o.failureRate, "failure-rate", 0, "failures per 1,000 GPU-hours, replacing the preset's (0: the preset's)")
	f.Float64Var(&o.benignScale, "benign-scale", 1, "multiply the rates of benign look-alike episodes (a sensitivity knob; 1 is the documented assumption)")
	f.StringVar(&o.out, "out", "", "directory to write (created if needed)")
	return cmd
}
