package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"

	gpuhealv1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/fleetview"
	"github.com/gpuheal/gpuheal/internal/termsafe"
)

type statusOptions struct {
	kube     *cluster
	out      *printer
	selector string
	color    string
	watch    bool
	interval time.Duration
	now      func() time.Time
}

func newStatusCommand(out io.Writer, k *cluster) *cobra.Command {
	o := &statusOptions{kube: k, now: time.Now}
	cmd := &cobra.Command{
		Use:   "status [NODE...] [--watch] [-o table|wide|json|yaml]",
		Short: "The fleet at a glance: every GPU node, worst first",
		Long: `One row per GPU node (or per NODE named): its state, GPUs healthy/total (the
agent's ` + gpuhealv1.LabelGPUHealthyCount + ` label against the node's ` + gpuhealv1.ResourceNvidiaGPU + `
capacity), the conditions that make it unhealthy, cordon, health tier and
score, the open remediation's phase and action, and age; -o wide adds the
incident and the agent's active warnings.

States, worst first: unhealthy (the agent's GPU or kernel condition False, by
gpuheal's names or the EKS ones, or the kubelet not Ready), remediating (an incident is open), cordoned,
warning (active warnings, or fewer healthy GPUs than the node has), healthy.
Within each, the lowest score first. -o json and -o yaml give the same view
as the status page's /status/api/fleet.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.validate(); err != nil {
				return err
			}
			return runStatus(cmd.Context(), out, cmd.ErrOrStderr(), o, args)
		},
	}
	o.out = addPrinter(cmd)
	cmd.Flags().StringVarP(&o.selector, "selector", "l", gpuhealv1.LabelNvidiaGPUPresent+"=true", "label selector of the nodes to show (\"\" for all); ignored when nodes are named")
	cmd.Flags().StringVar(&o.color, "color", "auto", "color rows by state: auto (on a terminal), always or never")
	cmd.Flags().BoolVarP(&o.watch, "watch", "w", false, "redraw every --interval until interrupted")
	cmd.Flags().DurationVar(&o.interval, "interval", 2*time.Second, "with --watch: time between redraws")
	return cmd
}

func (o *statusOptions) validate() error {
	switch {
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

func runStatus(ctx context.Context, out, errOut io.Writer, o *statusOptions, names []string) error {
	c, err := o.kube.client()
	if err != nil {
		return err
	}
	color := o.color == "always" || (o.color == "auto" && isTerminal(out))
	draw := func() error {
		v, err := readFleet(ctx, c, o.selector, names)
		if err != nil {
			return err
		}
		if o.watch && color && !o.out.structured() {
			fmt.Fprint(out, "\x1b[H\x1b[2J") // home and clear: redraw in place
		}
		return o.out.print(out, v, func(w io.Writer, wide bool) error {
			return writeFleetTable(w, v, o.now(), color, wide)
		})
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
				fmt.Fprintf(errOut, "gpuheal status: %v (retrying)\n", err)
			}
		}
	}
}

// ANSI colors per state.
var stateColor = map[fleetview.State]string{
	fleetview.StateUnhealthy:   "\x1b[31m", // red
	fleetview.StateRemediating: "\x1b[33m", // yellow
	fleetview.StateCordoned:    "\x1b[33m",
	fleetview.StateWarning:     "\x1b[36m", // cyan
	fleetview.StateHealthy:     "\x1b[32m", // green
}

const colorReset = "\x1b[0m"

func writeFleetTable(out io.Writer, v fleetview.View, now time.Time, color, wide bool) error {
	counts := make([]string, 0, len(fleetview.States))
	for _, st := range fleetview.States {
		counts = append(counts, fmt.Sprintf("%d %s", v.Summary.Count(st), st))
	}
	fmt.Fprintf(out, "%d nodes: %s\n", v.Summary.Nodes, strings.Join(counts, ", "))
	for _, p := range v.Policies {
		if p.ProviderReady == string(metav1.ConditionFalse) {
			// The message is the cluster's (a cloud's error text): one
			// line, no control characters.
			fmt.Fprintf(out, "policy %s: provider not ready (%s): %s\n",
				termsafe.Line(p.Name), termsafe.Line(p.ProviderReason), termsafe.Line(p.ProviderMessage))
		}
	}
	// tabwriter would count color codes as width; color whole lines after
	// aligning instead.
	var table strings.Builder
	tw := newTable(&table)
	header := "NODE\tSTATE\tGPUS\tPROBLEMS\tSCHED\tTIER\tSCORE\tREMEDIATION\tAGE"
	if wide {
		header += "\tINCIDENT\tWARNINGS"
	}
	fmt.Fprintln(tw, header)
	for _, r := range v.Nodes {
		fmt.Fprint(tw, strings.Join(fleetCells(r, now, wide), "\t")+"\n")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	lines := strings.SplitAfter(table.String(), "\n")
	for i, line := range lines {
		if color && i > 0 && i <= len(v.Nodes) {
			line = stateColor[v.Nodes[i-1].State] + strings.TrimSuffix(line, "\n") + colorReset + "\n"
		}
		if _, err := io.WriteString(out, line); err != nil {
			return err
		}
	}
	return nil
}

func fleetCells(r fleetview.Row, now time.Time, wide bool) []string {
	gpus := "?/" + strconv.Itoa(r.GPUs)
	if r.HealthyGPUs != nil {
		gpus = strconv.Itoa(*r.HealthyGPUs) + "/" + strconv.Itoa(r.GPUs)
	}
	problems := strings.Join(r.Problems(), ",")
	if problems == "" && r.ActiveWarnings > 0 {
		problems = fmt.Sprintf("warn: %d active", r.ActiveWarnings)
	}
	sched := "ok"
	if r.Unschedulable {
		sched = "cordoned"
	}
	score := "-"
	if r.Score != nil {
		score = strconv.FormatFloat(*r.Score, 'f', 1, 64)
	}
	remediation := string(r.Phase)
	if r.Action != "" && remediation != "" {
		remediation += " (" + string(r.Action) + ")"
	}
	cells := []string{r.Name, string(r.State), gpus, orDash(problems), sched, orDash(r.Tier), score, orDash(remediation),
		duration.HumanDuration(now.Sub(r.Created))}
	if wide {
		cells = append(cells, orDash(r.Incident), strconv.Itoa(r.ActiveWarnings))
	}
	return cells
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd())) //nolint:gosec // a file descriptor fits an int
}
