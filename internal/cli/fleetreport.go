package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"

	gpuhealv1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/audit"
	"github.com/gpuheal/gpuheal/internal/fleetreport"
	"github.com/gpuheal/gpuheal/internal/predict/promsource"
	"github.com/gpuheal/gpuheal/internal/score"
	"github.com/gpuheal/gpuheal/internal/termsafe"
)

const outHTML = "html"

// The --node-info values.
const (
	nodeInfoAuto    = "auto"
	nodeInfoCluster = "cluster"
	nodeInfoNone    = "none"
)

// nodeInfoTimeout bounds the Node list of --node-info auto, so that an
// unreachable cluster in the kubeconfig delays an offline report little.
const nodeInfoTimeout = 10 * time.Second

type fleetReportOptions struct {
	source         auditSourceOptions
	out            *printer
	since, until   string
	svg            string
	nodeInfo       string
	gpusPerNode    int
	lemonIncidents int
	lemonWindow    string
	now            func() time.Time
}

func newFleetReportCommand(out io.Writer, k *cluster) *cobra.Command {
	def := score.DefaultLemonRule()
	o := &fleetReportOptions{source: auditSourceOptions{kube: k}, now: time.Now}
	cmd := &cobra.Command{
		Use:   "report [--since 30d] [-o table|json|html] [--svg FILE]",
		Short: "The fleet's reliability from the audit log: incidents, MTBI, MTTR, GPU-hours lost, lemons",
		Long: `Reads the audit log and reports, per node, machine (the hardware, whatever its
node's name), instance type and zone: the incidents, the mean time between
incidents (MTBI), the mean time to recover (MTTR, from an incident's Detected
record to its Succeeded, Failed or Cancelled one) and the GPU-hours lost; and
the lemons, by the controller's own rule (--lemon-incidents hardware incidents
of a machine or of one GPU within --lemon-window), each with its incidents as
evidence. -o html is one self-contained page with a chart of the incidents per
day and of the time between incidents; --svg writes that chart alone.

Instance types, zones and GPU counts come from the Nodes' labels
(--node-info): auto reads them when the cluster answers and says unknown
otherwise; cluster requires them; none never asks. A node no longer in the
cluster is unknown.

By default it asks the controller in namespace -n (default gpuheal) through
the API server's service proxy; --controller-url, --audit-db or --audit-jsonl
read elsewhere. See docs/fleet-report.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.source.resolve(cmd)
			return runFleetReport(cmd.Context(), out, o)
		},
	}
	o.out = addPrinter(cmd, outTable, outJSON, outHTML)
	o.source.addFlags(cmd.Flags())
	f := cmd.Flags()
	f.StringVar(&o.since, "since", "30d", "report on incidents detected since this long ago (30d, 1w, 36h), this RFC 3339 time, or 0 for all")
	f.StringVar(&o.until, "until", "", "the report as it stood at this RFC 3339 time or this long ago, records after it left out (default now); --since counts back from it")
	f.StringVar(&o.svg, "svg", "", "also write the chart (incidents per day, time between incidents) to this SVG file")
	f.StringVar(&o.nodeInfo, "node-info", nodeInfoAuto, "instance types, zones and GPU counts from the Nodes' labels: auto, cluster or none")
	f.IntVar(&o.gpusPerNode, "gpus-per-node", 0, "GPUs of a node whose labels are not read (0: its GPU-hours lost are unknown)")
	f.IntVar(&o.lemonIncidents, "lemon-incidents", def.Incidents, "the lemon rule: this many hardware incidents of a machine or GPU…")
	f.StringVar(&o.lemonWindow, "lemon-window", model.Duration(def.Window).String(), "…within this window (30d, 2w, 720h)")
	return cmd
}

// parseSince reads --since: "0" (all history), else promsource.ParseTime's
// duration back from now or RFC 3339 time.
func parseSince(s string, now time.Time) (time.Time, error) {
	if s == "0" {
		return time.Time{}, nil
	}
	t, err := promsource.ParseTime(s, now)
	if err != nil {
		return time.Time{}, fmt.Errorf("--since %w, or 0 for all history", err)
	}
	return t, nil
}

// parseLemonRule reads --lemon-incidents and --lemon-window.
func parseLemonRule(incidents int, window string) (score.LemonRule, error) {
	d, err := model.ParseDuration(window)
	if err != nil {
		return score.LemonRule{}, fmt.Errorf("--lemon-window %q: want a duration such as 30d, 2w or 720h", window)
	}
	rule := score.LemonRule{Incidents: incidents, Window: time.Duration(d)}
	if err := rule.Validate(); err != nil {
		return score.LemonRule{}, fmt.Errorf("--lemon-incidents %d --lemon-window %s: %w", incidents, window, err)
	}
	return rule, nil
}

func runFleetReport(ctx context.Context, out io.Writer, o *fleetReportOptions) error {
	now := o.now()
	if o.until != "" {
		until, err := promsource.ParseTime(o.until, now)
		if err != nil {
			return fmt.Errorf("--until %w", err)
		}
		now = until
	}
	since, err := parseSince(o.since, now)
	if err != nil {
		return err
	}
	rule, err := parseLemonRule(o.lemonIncidents, o.lemonWindow)
	if err != nil {
		return err
	}
	switch {
	case o.nodeInfo != nodeInfoAuto && o.nodeInfo != nodeInfoCluster && o.nodeInfo != nodeInfoNone:
		return fmt.Errorf("--node-info %q: want auto, cluster or none", o.nodeInfo)
	case o.gpusPerNode < 0:
		return fmt.Errorf("--gpus-per-node %d: must not be negative", o.gpusPerNode)
	}
	recs, err := readReportRecords(ctx, &o.source, since, now.Add(-rule.Window))
	if err != nil {
		return err
	}
	if o.until != "" {
		recs = slices.DeleteFunc(recs, func(r audit.Record) bool { return r.Time.After(now) })
	}
	nodes, err := readNodeInfo(ctx, o.source.kube, o.nodeInfo)
	if err != nil {
		return err
	}
	rep, err := fleetreport.Build(recs, nodes, now, fleetreport.Options{Since: since, Lemon: rule, GPUsPerNode: o.gpusPerNode})
	if err != nil {
		return err
	}
	if o.svg != "" {
		if err := writeSVGFile(o.svg, &rep); err != nil {
			return err
		}
	}
	if o.out.format == outHTML {
		return fleetreport.HTML(out, &rep)
	}
	return o.out.print(out, rep, func(w io.Writer, _ bool) error { return writeFleetReport(w, &rep) })
}

// readReportRecords reads the records of the period and of the lemon
// rule's window, whichever begins first, with the whole of every incident
// that began before it.
func readReportRecords(ctx context.Context, src *auditSourceOptions, since, lemonFrom time.Time) ([]audit.Record, error) {
	r, closeFn, err := src.open(ctx)
	if err != nil {
		return nil, err
	}
	defer closeFn()
	f := audit.Filter{Limit: -1}
	if !since.IsZero() {
		f.Since = since
		if lemonFrom.Before(since) {
			f.Since = lemonFrom
		}
	}
	recs, err := r.Query(ctx, f)
	if err != nil {
		return nil, err
	}
	return completeIncidents(ctx, r, recs)
}

// readNodeInfo reads what the Nodes' labels say; nil when mode is none,
// or auto and the cluster does not answer.
func readNodeInfo(ctx context.Context, k *cluster, mode string) (map[string]fleetreport.NodeInfo, error) {
	if mode == nodeInfoNone {
		return nil, nil
	}
	nodes, err := func() ([]corev1.Node, error) {
		if k == nil {
			return nil, errors.New("no cluster flags")
		}
		c, err := k.client()
		if err != nil {
			return nil, err
		}
		if mode == nodeInfoAuto {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, nodeInfoTimeout)
			defer cancel()
		}
		return readNodes(ctx, c, "", nil)
	}()
	if err != nil {
		if mode == nodeInfoCluster {
			return nil, fmt.Errorf("--node-info cluster: %w", err)
		}
		logger().Warn("Instance types and zones are unknown: the Nodes could not be read (--node-info none skips them)", "error", err)
		return nil, nil
	}
	out := make(map[string]fleetreport.NodeInfo, len(nodes))
	for i := range nodes {
		n := &nodes[i]
		out[n.Name] = fleetreport.NodeInfo{InstanceType: n.Labels[gpuhealv1.LabelInstanceType], Zone: n.Labels[gpuhealv1.LabelZone],
			GPUs: nodeGPUs(n)}
	}
	return out, nil
}

// nodeGPUs is the largest GPU count a node's labels or capacity give: the
// instance type's (Karpenter, EKS), what feature discovery counted, what
// the device plugin offers. A GPU that died lowers the last two, not the
// hardware the incident took out of service.
func nodeGPUs(n *corev1.Node) int {
	best := 0
	for _, l := range []string{gpuhealv1.LabelKarpenterInstanceGPUCount, gpuhealv1.LabelEKSInstanceGPUCount, gpuhealv1.LabelNvidiaGPUCount} {
		if v, err := strconv.Atoi(n.Labels[l]); err == nil && v > best {
			best = v
		}
	}
	if q, ok := n.Status.Capacity["nvidia.com/gpu"]; ok && int(q.Value()) > best {
		best = int(q.Value())
	}
	return best
}

func writeSVGFile(path string, rep *fleetreport.Report) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("--svg: %w", err)
	}
	if err := fleetreport.SVG(f, rep); err != nil {
		_ = f.Close()
		return fmt.Errorf("--svg %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("--svg %s: %w", path, err)
	}
	return nil
}

// writeFleetReport is the report for a terminal. Every name comes from the
// audit log or the Nodes, which record what others wrote: cells are
// cleaned of control sequences, tabs and newlines.
func writeFleetReport(out io.Writer, r *fleetreport.Report) error {
	w := termsafe.NewWriter(out)
	period := "all history"
	if r.Since != nil {
		period = "since " + r.Since.Format("2006-01-02 15:04 MST")
	}
	fmt.Fprintf(w, "Fleet report at %s, %s\n", r.Generated.Format("2006-01-02 15:04 MST"), period)
	fmt.Fprintf(w, "%d incidents (%d hardware, %d open) on %d nodes and %d machines; MTBI %s, MTTR %s, GPU-hours lost %s\n",
		r.Fleet.Incidents, r.Fleet.Hardware, r.Fleet.Open, len(r.Nodes), len(r.Machines),
		fleetreport.Seconds(r.Fleet.MTBISeconds), fleetreport.Seconds(r.Fleet.MTTRSeconds), fleetreport.GPUHours(r.Fleet))
	if r.NodeInfo == nodeInfoNone {
		fmt.Fprintln(w, "Instance types and zones: unknown (the Nodes' labels were not read)")
	}
	fmt.Fprintf(w, "\nLEMONS: %d hardware incidents of a machine or of one GPU within %s (the controller's rule)\n",
		r.LemonRule.Incidents, r.LemonRule.Window)
	if len(r.Lemons) == 0 {
		fmt.Fprintln(w, "none")
	} else {
		tw := newTable(w)
		fmt.Fprintln(tw, "MACHINE\tGPU\tINCIDENT\tTIME\tNODE\tCLASS\tACTION\tREASON")
		for _, l := range r.Lemons {
			for i, e := range l.Evidence {
				machine, gpu := termsafe.Line(l.Machine), orDash(termsafe.Line(l.GPU))
				if i > 0 {
					machine, gpu = "", ""
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", machine, gpu, termsafe.Line(e.Incident),
					e.Time.Format("2006-01-02 15:04"), termsafe.Line(e.Node), e.Class, orDash(termsafe.Line(e.Action)),
					orDash(termsafe.Line(e.Reason)))
			}
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	for _, s := range []struct {
		title, also string
		groups      []fleetreport.Group
	}{
		{"NODE", "MACHINES", r.Nodes}, {"MACHINE", "NODES", r.Machines},
		{"INSTANCE TYPE", "", r.InstanceTypes}, {"ZONE", "", r.Zones},
	} {
		fmt.Fprintln(w)
		if err := writeGroups(w, s.title, s.also, s.groups); err != nil {
			return err
		}
	}
	return nil
}

func writeGroups(w io.Writer, title, also string, groups []fleetreport.Group) error {
	tw := newTable(w)
	header := title + "\tINCIDENTS\tHARDWARE\tOPEN\tMTBI\tMTTR\tGPU-HOURS"
	if also != "" {
		header += "\t" + also
	}
	fmt.Fprintln(tw, header)
	if len(groups) == 0 {
		fmt.Fprintln(tw, "-")
	}
	for _, g := range groups {
		line := fmt.Sprintf("%s\t%d\t%d\t%d\t%s\t%s\t%s", termsafe.Line(g.Name), g.Incidents, g.Hardware, g.Open,
			fleetreport.Seconds(g.MTBISeconds), fleetreport.Seconds(g.MTTRSeconds), fleetreport.GPUHours(g))
		if also != "" {
			line += "\t" + orDash(termsafe.Line(strings.Join(append(g.Machines, g.Nodes...), ",")))
		}
		fmt.Fprintln(tw, line)
	}
	return tw.Flush()
}
