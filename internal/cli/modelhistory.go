package cli

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/gpuheal/gpuheal/internal/predict/promsource"
)

// historyOptions are `gpuheal model train`'s flags for training on a
// fleet's own history: telemetry from Prometheus, labels from the audit
// log.
type historyOptions struct {
	prometheus    string
	audit         auditSourceOptions
	since, until  string
	step          time.Duration
	nodeLabel     string
	selector      string
	maxSamples    int
	ignoreReasons []string
	saveTraces    string
}

// historyFlags are the flags that only make sense with --prometheus.
var historyFlags = []string{"audit-db", "audit-jsonl", "since", "until", "step", "node-label", "selector",
	"query-max-samples", "ignore-reason", "save-traces"}

func (h *historyOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&h.prometheus, "prometheus", "", "train on the fleet's history in this Prometheus (http://host:9090) instead of --traces")
	h.audit.addFileFlags(fs)
	fs.StringVar(&h.since, "since", "30d", "history from this long ago (30d, 1w, 36h) or this RFC 3339 time")
	fs.StringVar(&h.until, "until", "", "history up to this long ago or this RFC 3339 time (default now)")
	fs.DurationVar(&h.step, "step", 30*time.Second, "one sample per GPU every step (the features use 30 s slots)")
	fs.StringVar(&h.nodeLabel, "node-label", "node", "label that carries the node name (the chart's ServiceMonitor sets node)")
	fs.StringVar(&h.selector, "selector", "", `label matchers added to every query, e.g. cluster="prod",job="gpuheal-agent"`)
	fs.IntVar(&h.maxSamples, "query-max-samples", promsource.DefaultMaxSamples,
		"most samples one query may load; keep under half the server's --query.max-samples")
	fs.StringSliceVar(&h.ignoreReasons, "ignore-reason", promsource.DefaultIgnoredReasons,
		"incident reasons that are not GPU failures")
	fs.StringVar(&h.saveTraces, "save-traces", "", "keep the labelled traces made from the history in this directory (for model eval)")
}

// check refuses history flags without --prometheus, and --prometheus
// with --traces or without an audit log.
func (h *historyOptions) check(fs *pflag.FlagSet, traces []string) error {
	if h.prometheus == "" {
		for _, name := range historyFlags {
			if fs.Changed(name) {
				return fmt.Errorf("--%s: only with --prometheus", name)
			}
		}
		return nil
	}
	switch {
	case len(traces) > 0:
		return fmt.Errorf("--traces and --prometheus: give one (labelled traces, or a Prometheus and an audit log to label its history)")
	case h.audit.dbPath == "" && h.audit.jsonlPath == "":
		return fmt.Errorf("--prometheus: the failure labels come from the audit log; give --audit-db or --audit-jsonl")
	case h.audit.dbPath != "" && h.audit.jsonlPath != "":
		return fmt.Errorf("--audit-db and --audit-jsonl: give one")
	}
	return nil
}

// build makes a labelled trace directory from the history and prints what
// it found. cleanup removes the directory unless --save-traces keeps it.
func (h *historyOptions) build(ctx context.Context, out io.Writer) (dir string, cleanup func(), err error) {
	now := time.Now()
	start, err := promsource.ParseTime(h.since, now)
	if err != nil {
		return "", nil, fmt.Errorf("--since: %w", err)
	}
	end := now
	if h.until != "" {
		if end, err = promsource.ParseTime(h.until, now); err != nil {
			return "", nil, fmt.Errorf("--until: %w", err)
		}
	}
	log, closeLog, err := h.audit.open(ctx)
	if err != nil {
		return "", nil, err
	}
	defer closeLog()
	cleanup = func() {}
	dir = h.saveTraces
	if dir == "" {
		if dir, err = os.MkdirTemp("", "gpuheal-history-"); err != nil {
			return "", nil, err
		}
		cleanup = func() { _ = os.RemoveAll(dir) }
	}
	auditPath := h.audit.dbPath + h.audit.jsonlPath
	res, err := promsource.Build(ctx, dir, promsource.Options{
		URL: h.prometheus, Start: start, End: end, Step: h.step, NodeLabel: h.nodeLabel, Selector: h.selector,
		MaxSamples: h.maxSamples, Log: logger(),
	}, promsource.LabelOptions{IgnoreReasons: h.ignoreReasons}, log, auditPath)
	if err != nil {
		cleanup()
		return "", nil, err
	}
	printHistory(out, res, h.nodeLabel)
	if len(res.Manifest.Failures) == 0 {
		cleanup()
		return "", nil, fmt.Errorf("no failure to learn from: %s has no incident on these GPUs from %s to %s",
			auditPath, res.Telemetry.Start.Format(time.RFC3339), res.Telemetry.End.Format(time.RFC3339))
	}
	return dir, cleanup, nil
}

// printHistory says what the history held: GPUs, samples, failures.
func printHistory(out io.Writer, r *promsource.Result, nodeLabel string) {
	t, l := r.Telemetry, r.Labels
	nodes, failed, unnamed := map[string]bool{}, map[int]bool{}, 0
	for _, s := range t.Slots {
		nodes[s.Node] = true
		if s.Node == "" {
			unnamed++
		}
	}
	for _, f := range r.Manifest.Failures {
		failed[f.GPU] = true
	}
	fmt.Fprintf(out, "history %s to %s at %s: %d GPUs on %d nodes, %d samples (%d steps without data); "+
		"%d queries in %d chunks, %d points, %.1f s\n",
		t.Start.Format(time.RFC3339), t.End.Format(time.RFC3339), t.Step, len(t.Slots), len(nodes), t.Samples, t.Gaps,
		t.Queries, t.Chunks, t.Points, t.Seconds)
	var notes []string
	if l.NodeWide > 0 {
		notes = append(notes, fmt.Sprintf("%d named no GPU and fell on their whole node", l.NodeWide))
	}
	if l.Merged > 0 {
		notes = append(notes, fmt.Sprintf("%d fell inside an earlier outage of the GPU", l.Merged))
	}
	for _, k := range slices.Sorted(maps.Keys(l.Ignored)) {
		notes = append(notes, fmt.Sprintf("%d %s ignored", l.Ignored[k], k))
	}
	if n := len(l.Unmatched); n > 0 {
		notes = append(notes, fmt.Sprintf("%d without telemetry (%s)", n, strings.Join(l.Unmatched[:min(n, 5)], ", ")))
	}
	if unnamed > 0 {
		fmt.Fprintf(out, "warning: %d GPUs' series carry no node label %q: incidents naming no GPU cannot be placed on them (--node-label)\n",
			unnamed, nodeLabel)
	}
	fmt.Fprintf(out, "audit log: %d incidents, %d failure labels on %d GPUs", l.Incidents, l.Failures, len(failed))
	if len(notes) > 0 {
		fmt.Fprintf(out, " (%s)", strings.Join(notes, "; "))
	}
	fmt.Fprintln(out)
}

// redactURL hides a password in a URL recorded in the model file.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	return u.Redacted()
}
