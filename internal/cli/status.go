package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/duration"
)

type statusOptions struct {
	kube     kubeOptions
	selector string
	output   string
	color    string
	watch    bool
	interval time.Duration
	now      func() time.Time
}

func newStatusCommand(out io.Writer) *cobra.Command {
	o := &statusOptions{now: time.Now}
	cmd := &cobra.Command{
		Use:   "status [--watch] [-o table|json]",
		Short: "The fleet at a glance: every GPU node, worst first",
		Long: `One row per GPU node: GPUs healthy/total (the agent's gpuheal.io/gpu-healthy-count
label against the node's nvidia.com/gpu capacity), the conditions that are not
healthy, cordon, health tier and score, the open remediation's phase, and age.
Unhealthy nodes come first, then those being remediated, cordoned, warned, and
healthy ones; within each, the lowest score first.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.validate(); err != nil {
				return err
			}
			return runStatus(cmd.Context(), out, o)
		},
	}
	o.kube.addFlags(cmd.Flags())
	cmd.Flags().StringVarP(&o.selector, "selector", "l", "nvidia.com/gpu.present=true", "label selector of the nodes to show (\"\" for all)")
	cmd.Flags().StringVarP(&o.output, "output", "o", "table", "table or json")
	cmd.Flags().StringVar(&o.color, "color", "auto", "color rows by state: auto (on a terminal), always or never")
	cmd.Flags().BoolVarP(&o.watch, "watch", "w", false, "redraw every --interval until interrupted")
	cmd.Flags().DurationVar(&o.interval, "interval", 2*time.Second, "with --watch: time between redraws")
	return cmd
}

func (o *statusOptions) validate() error {
	switch {
	case o.output != "table" && o.output != "json":
		return fmt.Errorf("-o %q: want table or json", o.output)
	case o.color != "auto" && o.color != "always" && o.color != "never":
		return fmt.Errorf("--color %q: want auto, always or never", o.color)
	case o.watch && o.interval < 100*time.Millisecond:
		return fmt.Errorf("--interval %s: must be at least 100ms", o.interval)
	}
	if _, err := parseSelector(o.selector); err != nil {
		return err
	}
	return nil
}

func runStatus(ctx context.Context, out io.Writer, o *statusOptions) error {
	c, err := fleetClient(&o.kube)
	if err != nil {
		return err
	}
	color := o.color == "always" || (o.color == "auto" && isTerminal(out))
	draw := func() error {
		rows, err := readFleet(ctx, c, o.selector)
		if err != nil {
			return err
		}
		if o.output == "json" {
			enc := json.NewEncoder(out)
			enc.SetIndent("", "  ")
			return enc.Encode(rows)
		}
		if o.watch && color {
			fmt.Fprint(out, "\x1b[H\x1b[2J") // home and clear: redraw in place
		}
		return writeFleetTable(out, rows, o.now(), color)
	}
	if err := draw(); err != nil || !o.watch {
		return err
	}
	tick := time.NewTicker(o.interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			if err := draw(); err != nil {
				// A watch outlives API server hiccups; say so and go on.
				fmt.Fprintf(out, "gpuheal status: %v (retrying)\n", err)
			}
		}
	}
}

// ANSI colors per row state.
var stateColor = map[string]string{
	stateUnhealthy:   "\x1b[31m", // red
	stateRemediating: "\x1b[33m", // yellow
	stateCordoned:    "\x1b[33m",
	stateWarning:     "\x1b[36m", // cyan
	stateHealthy:     "\x1b[32m", // green
}

const colorReset = "\x1b[0m"

func writeFleetTable(out io.Writer, rows []fleetNode, now time.Time, color bool) error {
	counts := map[string]int{}
	for _, r := range rows {
		counts[r.State]++
	}
	fmt.Fprintf(out, "%d nodes: %d unhealthy, %d remediating, %d cordoned, %d warning, %d healthy\n",
		len(rows), counts[stateUnhealthy], counts[stateRemediating], counts[stateCordoned], counts[stateWarning], counts[stateHealthy])
	// tabwriter would count color codes as width; color whole lines after
	// aligning instead.
	var table strings.Builder
	tw := tabwriter.NewWriter(&table, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tSTATE\tGPUS\tPROBLEMS\tSCHED\tTIER\tSCORE\tREMEDIATION\tAGE")
	for _, r := range rows {
		gpus := "?/" + strconv.Itoa(r.GPUsTotal)
		if r.GPUsHealthy != nil {
			gpus = strconv.Itoa(*r.GPUsHealthy) + "/" + strconv.Itoa(r.GPUsTotal)
		}
		problems := strings.Join(r.Problems, ",")
		if problems == "" && r.ActiveWarnings > 0 {
			problems = fmt.Sprintf("warn: %d active", r.ActiveWarnings)
		}
		sched := "ok"
		if r.Cordoned {
			sched = "cordoned"
		}
		score := "-"
		if r.Score != nil {
			score = strconv.FormatFloat(*r.Score, 'f', 1, 64)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Node, r.State, gpus, orDash(problems), sched,
			orDash(r.Tier), score, orDash(r.Remediation), duration.HumanDuration(now.Sub(r.Created)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	lines := strings.SplitAfter(table.String(), "\n")
	for i, line := range lines {
		if color && i > 0 && i <= len(rows) {
			line = stateColor[rows[i-1].State] + strings.TrimSuffix(line, "\n") + colorReset + "\n"
		}
		if _, err := io.WriteString(out, line); err != nil {
			return err
		}
	}
	return nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd())) //nolint:gosec // a file descriptor fits an int
}

func parseSelector(s string) (labels.Selector, error) {
	sel, err := labels.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("--selector %q: %w", s, err)
	}
	return sel, nil
}

// isNoKind: the cluster has no such resource (our CRDs not installed).
func isNoKind(err error) bool {
	var noMatch *meta.NoKindMatchError
	return errors.As(err, &noMatch) || meta.IsNoMatchError(err)
}
