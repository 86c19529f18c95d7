package cli

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gpuhealv1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/audit"
	"github.com/gpuheal/gpuheal/internal/fleetview"
	"github.com/gpuheal/gpuheal/internal/termsafe"
)

type describeOptions struct {
	kube      *cluster
	source    auditSourceOptions
	history   time.Duration
	incidents int
	now       func() time.Time
}

func newDescribeCommand(out io.Writer, k *cluster) *cobra.Command {
	describe := &cobra.Command{
		Use:   "describe",
		Short: "Everything gpuheal knows about one object",
	}
	o := &describeOptions{kube: k, source: auditSourceOptions{kube: k}, now: time.Now}
	node := &cobra.Command{
		Use:   "node NODE",
		Short: "A node's problems, GPUs, incidents and score history",
		Long: `Shows a node's health as gpuheal sees it: the GPU and kernel conditions with
their reasons, the warnings the agent reports, the per-GPU scores, the
NodeRemediations of the node (newest first, the open one with its phase
history), and the audit log's incidents of the node over --history, which
are what its health score is computed from (docs/health-score.md).

The audit log is read as 'gpuheal incidents' reads it; when it cannot be
reached, the rest is still shown.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.history < 0 {
				return fmt.Errorf("--history %s: must not be negative", o.history)
			}
			o.source.resolve(cmd)
			// Conditions, phases and audit reasons are text that
			// agents, kubelets and clouds wrote: no escape sequence of
			// theirs reaches the terminal.
			return runDescribeNode(cmd.Context(), termsafe.NewWriter(out), args[0], o)
		},
	}
	o.source.addFlags(node.Flags())
	node.Flags().DurationVar(&o.history, "history", 30*24*time.Hour, "audit-log history to show (the health score's window)")
	node.Flags().IntVar(&o.incidents, "incidents", 10, "most NodeRemediations to show")
	describe.AddCommand(node)
	return describe
}

func runDescribeNode(ctx context.Context, out io.Writer, name string, o *describeOptions) error {
	c, err := o.kube.client()
	if err != nil {
		return err
	}
	var n corev1.Node
	if err := c.Get(ctx, client.ObjectKey{Name: name}, &n); err != nil {
		return fmt.Errorf("reading node %s: %w", name, err)
	}
	rems, err := nodeRemediations(ctx, c, name)
	if err != nil {
		return err
	}
	now := o.now()
	row := fleetview.RowOf(&n, fleetview.OpenIncidents(rems)[name])
	writeNodeSummary(out, &n, row, now)
	writeNodeConditions(out, &n, now)
	writeGPUScores(out, &n)
	writeNodeRemediations(out, rems, o.incidents, now)
	writeAuditHistory(ctx, out, name, o, now)
	return nil
}

func writeNodeSummary(out io.Writer, n *corev1.Node, row fleetview.Row, now time.Time) {
	gpus := "?"
	if row.HealthyGPUs != nil {
		gpus = strconv.Itoa(*row.HealthyGPUs)
	}
	score := "-"
	if row.Score != nil {
		score = strconv.FormatFloat(*row.Score, 'f', 1, 64)
	}
	fmt.Fprintf(out, "Node:          %s\n", n.Name)
	fmt.Fprintf(out, "State:         %s\n", row.State)
	fmt.Fprintf(out, "GPUs healthy:  %s/%d (%s)\n", gpus, row.GPUs, orDash(n.Labels[gpuhealv1.LabelNvidiaGPUProduct]))
	fmt.Fprintf(out, "Health:        score %s, tier %s\n", score, orDash(row.Tier))
	sched := "schedulable"
	if n.Spec.Unschedulable {
		sched = "cordoned"
		if by := n.Annotations[gpuhealv1.AnnotationCordonedBy]; by != "" {
			sched += " by " + by
		}
	}
	fmt.Fprintf(out, "Scheduling:    %s\n", sched)
	for _, t := range n.Spec.Taints {
		if strings.HasPrefix(t.Key, gpuhealv1.GroupVersion.Group+"/") {
			fmt.Fprintf(out, "Taint:         %s:%s\n", t.Key, t.Effect)
		}
	}
	fmt.Fprintf(out, "Provider ID:   %s\n", orDash(n.Spec.ProviderID))
	fmt.Fprintf(out, "Age:           %s\n", duration.HumanDuration(now.Sub(n.CreationTimestamp.Time)))
}

// twinShown says whether t is one of the agent's condition types that need
// no "not reported" line: an EKS name (the agent publishes those only on
// opt-in), or a gpuheal name whose EKS twin the node shows.
func twinShown(n *corev1.Node, t corev1.NodeConditionType) bool {
	var twin corev1.NodeConditionType
	switch t {
	case gpuhealv1.ConditionAcceleratedHardwareReady, gpuhealv1.ConditionKernelReady, gpuhealv1.ConditionNetworkingReady:
		return true
	case gpuhealv1.ConditionGPUHealAcceleratorHealthy:
		twin = gpuhealv1.ConditionAcceleratedHardwareReady
	case gpuhealv1.ConditionGPUHealKernelHealthy:
		twin = gpuhealv1.ConditionKernelReady
	case gpuhealv1.ConditionGPUHealNetworkingHealthy:
		twin = gpuhealv1.ConditionNetworkingReady
	default:
		return false
	}
	return slices.ContainsFunc(n.Status.Conditions, func(c corev1.NodeCondition) bool { return c.Type == twin })
}

func writeNodeConditions(out io.Writer, n *corev1.Node, now time.Time) {
	fmt.Fprintln(out, "\nConditions:")
	tw := newTable(out)
	fmt.Fprintln(tw, "  TYPE\tSTATUS\tREASON\tSINCE\tMESSAGE")
	for _, t := range fleetview.ConditionTypes {
		found := false
		for _, c := range n.Status.Conditions {
			if c.Type != t {
				continue
			}
			found = true
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", c.Type, c.Status, orDash(c.Reason),
				duration.HumanDuration(now.Sub(c.LastTransitionTime.Time)), orDash(termsafe.Line(c.Message)))
		}
		if !found && !twinShown(n, t) {
			fmt.Fprintf(tw, "  %s\t-\t-\t-\tnot reported\n", t)
		}
	}
	_ = tw.Flush()
	if w := n.Annotations[gpuhealv1.AnnotationActiveWarnings]; w != "" && w != "0" {
		fmt.Fprintf(out, "Warnings:      %s active (the node's warning Events name them)\n", w)
	}
}

func writeGPUScores(out io.Writer, n *corev1.Node) {
	gpus := parseGPUScores(n.Annotations[gpuhealv1.AnnotationGPUHealthScores])
	fmt.Fprintln(out, "\nGPUs (health score per GPU, worst first):")
	if len(gpus) == 0 {
		fmt.Fprintln(out, "  none scored: no incident or warning has touched a GPU of this node")
		return
	}
	tw := newTable(out)
	fmt.Fprintln(tw, "  UUID\tSCORE")
	for _, g := range gpus {
		fmt.Fprintf(tw, "  %s\t%.1f\n", g.UUID, g.Score)
	}
	_ = tw.Flush()
}

// nodeRemediations lists the node's incidents, newest first, through the
// spec.nodeName selectable field.
func nodeRemediations(ctx context.Context, c client.Client, node string) ([]gpuhealv1.NodeRemediation, error) {
	var list gpuhealv1.NodeRemediationList
	if err := c.List(ctx, &list, client.MatchingFields{"spec.nodeName": node}); err != nil {
		if isNoKind(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("listing NodeRemediations of %s: %w", node, err)
	}
	slices.SortFunc(list.Items, func(a, b gpuhealv1.NodeRemediation) int {
		return cmp.Or(b.CreationTimestamp.Compare(a.CreationTimestamp.Time), strings.Compare(b.Name, a.Name))
	})
	return list.Items, nil
}

func writeNodeRemediations(out io.Writer, rems []gpuhealv1.NodeRemediation, most int, now time.Time) {
	fmt.Fprintln(out, "\nRemediations (newest first):")
	if len(rems) == 0 {
		fmt.Fprintln(out, "  none")
		return
	}
	tw := newTable(out)
	fmt.Fprintln(tw, "  NAME\tOPENED\tTRIGGER\tACTION\tPHASE\tTOOK")
	for i, r := range rems {
		if i == most {
			fmt.Fprintf(tw, "  … %d older\n", len(rems)-most)
			break
		}
		took := "-"
		if len(r.Status.Phases) > 0 {
			end := now
			if r.Status.Phase.Terminal() {
				end = r.Status.Phases[len(r.Status.Phases)-1].Time.Time
			}
			took = end.Sub(r.Status.Phases[0].Time.Time).Round(time.Second).String()
		}
		trigger := r.Spec.Trigger.Type + "=" + string(r.Spec.Trigger.Status)
		if r.Spec.Trigger.Reason != "" {
			trigger += " (" + r.Spec.Trigger.Reason + ")"
		}
		fmt.Fprintf(tw, "  %s\t%s ago\t%s\t%s\t%s\t%s\n", r.Name, duration.HumanDuration(now.Sub(r.CreationTimestamp.Time)),
			trigger, orDash(string(r.Status.Action)), orDash(string(r.Status.Phase)), took)
	}
	_ = tw.Flush()
	if open := rems[0]; !open.Status.Phase.Terminal() && len(open.Status.Phases) > 0 {
		fmt.Fprintf(out, "  open incident %s:\n", open.Name)
		for _, p := range open.Status.Phases {
			fmt.Fprintf(out, "    %s  %-10s %s\n", p.Time.UTC().Format("15:04:05.000"), p.Phase, termsafe.Line(p.Message))
		}
	}
}

// writeAuditHistory prints the audit log's incidents of the node: the
// history the score decays over. An unreachable log is a note, not an error.
func writeAuditHistory(ctx context.Context, out io.Writer, node string, o *describeOptions, now time.Time) {
	fmt.Fprintf(out, "\nScore history (audit-log incidents, last %s):\n", duration.HumanDuration(o.history))
	r, closeFn, err := o.source.open(ctx)
	if err != nil {
		fmt.Fprintf(out, "  audit log not reachable: %v\n", err)
		return
	}
	defer closeFn()
	f := audit.Filter{Node: node, Limit: -1}
	if o.history > 0 {
		f.Since = now.Add(-o.history)
	}
	recs, err := r.Query(ctx, f)
	if err == nil {
		recs, err = completeIncidents(ctx, r, recs)
	}
	if err != nil {
		fmt.Fprintf(out, "  audit log not readable: %v\n", err)
		return
	}
	incs := summarize(recs)
	if len(incs) == 0 {
		fmt.Fprintln(out, "  no incidents: nothing lowers this node's score")
		return
	}
	var b strings.Builder
	if err := writeIncidentTable(&b, incs, now, false); err != nil {
		fmt.Fprintf(out, "  %v\n", err)
		return
	}
	for _, line := range strings.SplitAfter(b.String(), "\n") {
		if line != "" {
			fmt.Fprint(out, "  "+line)
		}
	}
}
