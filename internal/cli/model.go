package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpuheal/gpuheal/internal/predict"
	"github.com/gpuheal/gpuheal/internal/predict/evaluate"
	"github.com/gpuheal/gpuheal/internal/predict/trace"
	"github.com/gpuheal/gpuheal/internal/predict/train"
)

// newModelCommand is `gpuheal model`: the failure predictor.
func newModelCommand(out io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "model",
		Short: "Train and evaluate the GPU failure predictor",
		Long: `The failure predictor scores each GPU's risk of failing within the next 30
minutes from its telemetry. Train it on labelled traces (gpuheal sim traces,
or your fleet's), and evaluate it on traces it never saw. See docs/predictor.md.`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newModelTrainCommand(out), newModelEvalCommand(out))
	return cmd
}

// definitionFlags are the event definitions both subcommands share.
type definitionFlags struct {
	horizon, minLead time.Duration
}

func (d *definitionFlags) add(fs *pflag.FlagSet) {
	def := evaluate.DefaultDefinitions()
	fs.DurationVar(&d.horizon, "horizon", def.Horizon, "an alarm is true when its GPU fails within this long after it")
	fs.DurationVar(&d.minLead, "min-lead", def.MinLead, "a failure counts as predicted when alarmed at least this long before")
}

func (d *definitionFlags) definitions() (evaluate.Definitions, error) {
	def := evaluate.Definitions{Horizon: d.horizon, MinLead: d.minLead}
	if err := def.Check(); err != nil {
		return def, fmt.Errorf("--horizon/--min-lead: %w", err)
	}
	return def, nil
}

type modelTrainOptions struct {
	traces  []string
	history historyOptions
	out     string
	defs    definitionFlags
	opts    train.Options
}

func newModelTrainCommand(out io.Writer) *cobra.Command {
	o := &modelTrainOptions{opts: train.DefaultOptions()}
	cmd := &cobra.Command{
		Use:   "train (--traces DIR [--traces DIR…] | --prometheus URL --audit-db|--audit-jsonl FILE [--since 30d]) --out MODEL",
		Short: "Fit a model on labelled traces, or on your fleet's history",
		Long: `Computes features over every sample of the traces with the agent's own feature
code, fits gradient-boosted trees on a stratified sample of rows, holds out a
share of GPU slots to stop early and to choose the alarm threshold (the lowest
whose event-level precision there reaches --min-precision), and writes the
versioned model file. Evaluate it with "gpuheal model eval" on traces from
seeds it never saw.

With --prometheus instead of --traces it trains on your fleet's history: the
agent's metrics over --since by range queries, and failure labels from the
controller's audit log (each incident opened on a fatal GPU condition, on the
GPUs it names, or on its whole node when it names none). --save-traces keeps
the labelled traces it made. See docs/predictor.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.history.check(cmd.Flags(), o.traces); err != nil {
				return err
			}
			if len(o.traces) == 0 && o.history.prometheus == "" || o.out == "" {
				return fmt.Errorf("--traces (or --prometheus with an audit log) and --out: required")
			}
			defs, err := o.defs.definitions()
			if err != nil {
				return err
			}
			o.opts.Command = trainCommandLine(cmd, o.traces)
			traces := o.traces
			if o.history.prometheus != "" {
				dir, cleanup, err := o.history.build(cmd.Context(), out)
				if err != nil {
					return err
				}
				defer cleanup()
				traces = []string{dir}
			}
			o.opts.Traces, o.opts.Definitions, o.opts.Log = traces, defs, logger()
			m, sum, err := train.Train(cmd.Context(), o.opts)
			if err != nil {
				return err
			}
			data, err := json.Marshal(m.File())
			if err != nil {
				return err
			}
			if err := os.WriteFile(o.out, append(data, '\n'), 0o644); err != nil {
				return fmt.Errorf("writing model: %w", err)
			}
			v := sum.Validation
			_, err = fmt.Fprintf(out, "%s: %d trees, threshold %.4g, %d bytes; trained on %d samples (%d rows, %d positive) in %.1f s\n"+
				"held-out slots: precision %.3f, recall %.3f (%d of %d failures), median lead %s — optimistic, the threshold was chosen there\n",
				o.out, sum.Trees, m.Threshold, len(data)+1, sum.Samples, sum.TrainRows+sum.ValidationRows, sum.PositiveRows, sum.Seconds,
				v.Precision, v.Recall, v.Detected, v.Failures, time.Duration(v.MedianLeadSeconds)*time.Second)
			return err
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&o.traces, "traces", nil, "trace directory (repeat for several)")
	o.history.addFlags(f)
	f.StringVar(&o.out, "out", "", "model file to write")
	o.defs.add(f)
	p := &o.opts
	f.Float64Var(&p.MinPrecision, "min-precision", p.MinPrecision, "the threshold is the lowest reaching this precision on held-out slots")
	f.Float64Var(&p.ValidationShare, "validation-share", p.ValidationShare, "share of GPU slots held out")
	f.IntVar(&p.Params.Trees, "trees", p.Params.Trees, "most trees to fit (early stopping may keep fewer)")
	f.IntVar(&p.Params.MaxDepth, "depth", p.Params.MaxDepth, "depth of each tree")
	f.Float64Var(&p.Params.LearningRate, "learning-rate", p.Params.LearningRate, "shrinkage of each tree")
	f.Uint64Var(&p.Seed, "seed", p.Seed, "seed of the row sampling and the held-out split")
	f.IntVar(&p.Workers, "workers", 0, "parallel workers (0: one per CPU)")
	return cmd
}

type modelEvalOptions struct {
	traces []string
	model  string
	out    *printer
	curve  string
	defs   definitionFlags
	opts   evaluate.Options
}

func newModelEvalCommand(out io.Writer) *cobra.Command {
	o := &modelEvalOptions{}
	cmd := &cobra.Command{
		Use:   "eval --traces DIR [--traces DIR…] [--model MODEL] [-o table|json|yaml] [--pr-curve FILE.svg]",
		Short: "Measure a model, and the default threshold rules, on labelled traces",
		Long: `Scores every sample of the traces with the model (the shipped one unless
--model) and replays the default rule set's GPU rules on the same samples, then
prints, for both, event-level precision, recall, PR-AUC and median lead time at
the operating threshold. Definitions are in docs/predictor.md: an alarm is true
when its GPU fails within --horizon after it; a failure counts as predicted
when an alarm came at least --min-lead before it. Use traces from seeds never
used in training.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(o.traces) == 0 {
				return fmt.Errorf("--traces: required")
			}
			defs, err := o.defs.definitions()
			if err != nil {
				return err
			}
			m, err := loadModel(o.model)
			if err != nil {
				return err
			}
			var sets []*trace.Set
			for _, dir := range o.traces {
				s, err := trace.Open(dir)
				if err != nil {
					return err
				}
				sets = append(sets, s)
			}
			o.opts.Definitions = defs
			start := time.Now()
			r, err := evaluate.Evaluate(cmd.Context(), sets, m, o.opts)
			if err != nil {
				return err
			}
			logger().Info("evaluated", "samples", r.Samples, "seconds", time.Since(start).Seconds())
			if o.curve != "" {
				if err := os.WriteFile(o.curve, evaluate.CurveSVG(r), 0o644); err != nil {
					return fmt.Errorf("writing the PR curve: %w", err)
				}
			}
			return o.out.print(out, r, func(w io.Writer, _ bool) error { return evaluate.WriteText(w, r) })
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&o.traces, "traces", nil, "trace directory (repeat for several)")
	f.StringVar(&o.model, "model", "", "model file (default: the model shipped with gpuheal)")
	o.out = addPrinter(cmd, outTable, outJSON, outYAML)
	f.StringVar(&o.curve, "pr-curve", "", "also write the precision–recall curves as an SVG image here")
	o.defs.add(f)
	f.IntVar(&o.opts.Workers, "workers", 0, "parallel workers (0: one per CPU)")
	return cmd
}

// trainCommandLine restates the command for the model file, so that the
// file says how to make it again.
func trainCommandLine(cmd *cobra.Command, traces []string) string {
	args := []string{"gpuheal model train"}
	for _, t := range traces {
		args = append(args, "--traces "+t)
	}
	cmd.Flags().Visit(func(f *pflag.Flag) {
		switch f.Name {
		case "traces":
		case "prometheus":
			args = append(args, "--prometheus "+redactURL(f.Value.String()))
		default:
			args = append(args, "--"+f.Name+" "+f.Value.String())
		}
	})
	return strings.Join(args, " ")
}

func loadModel(path string) (*predict.Model, error) {
	if path == "" {
		return predict.Default()
	}
	return predict.LoadFile(path)
}
