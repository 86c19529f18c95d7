package cli

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/gpuheal/gpuheal/internal/audit"
	"github.com/gpuheal/gpuheal/internal/termsafe"
)

type incidentsOptions struct {
	source auditSourceOptions
	out    *printer
	node   string // the hidden --node of old; NODE arguments replace it
	since  time.Duration
	now    func() time.Time
}

func newIncidentsCommand(out io.Writer, k *cluster) *cobra.Command {
	o := &incidentsOptions{source: auditSourceOptions{kube: k}, now: time.Now}
	cmd := &cobra.Command{
		Use:   "incidents [NODE...] [--since 24h] [-o table|wide|json|yaml]",
		Short: "Incidents from the audit log (of each NODE, or all), newest first",
		Long: `Groups the audit log's records by incident and prints, newest first: the
incident, its node, when it opened, the action chosen, the outcome (Succeeded,
Failed or Cancelled once it ended, else its current phase), how long it took
(so far, for one still open) and why it opened; -o wide adds the last step's
time and the record count.

By default it asks the controller in namespace -n (default gpuheal) through
the API server's service proxy; --controller-url, --audit-db or --audit-jsonl
read elsewhere.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.since < 0 {
				return fmt.Errorf("--since %s: must not be negative", o.since)
			}
			if o.node != "" {
				args = append(args, o.node)
			}
			o.source.resolve(cmd)
			return runIncidents(cmd.Context(), out, o, args)
		},
	}
	o.out = addPrinter(cmd)
	o.source.addFlags(cmd.Flags())
	cmd.Flags().StringVar(&o.node, "node", "", "only incidents of this node (use NODE arguments)")
	_ = cmd.Flags().MarkHidden("node")
	cmd.Flags().DurationVar(&o.since, "since", 24*time.Hour, "incidents with a step this recent; 0 for all")
	return cmd
}

// incident is one row of the listing.
type incident struct {
	Incident string    `json:"incident"`
	Node     string    `json:"node"`
	Opened   time.Time `json:"opened"`
	Last     time.Time `json:"last"`
	Action   string    `json:"action,omitempty"`
	// Outcome is the terminal kind once the incident ended, else its phase.
	Outcome  string `json:"outcome"`
	Ended    bool   `json:"ended"`
	Duration string `json:"duration"`
	Reason   string `json:"reason,omitempty"`
	Records  int    `json:"records"`

	duration time.Duration
}

func runIncidents(ctx context.Context, out io.Writer, o *incidentsOptions, nodes []string) error {
	r, closeFn, err := o.source.open(ctx)
	if err != nil {
		return err
	}
	defer closeFn()
	now := o.now()
	f := audit.Filter{Limit: -1}
	if len(nodes) == 1 {
		f.Node = nodes[0] // the store filters; several are filtered here
	}
	if o.since > 0 {
		f.Since = now.Add(-o.since)
	}
	recs, err := r.Query(ctx, f)
	if err != nil {
		return err
	}
	recs, err = completeIncidents(ctx, r, recs)
	if err != nil {
		return err
	}
	incs := onNodes(summarize(recs), nodes)
	if incs == nil {
		incs = []incident{}
	}
	return o.out.print(out, incs, func(w io.Writer, wide bool) error { return writeIncidentTable(w, incs, now, wide) })
}

// onNodes keeps the incidents of the named nodes; none named keeps all.
func onNodes(incs []incident, nodes []string) []incident {
	if len(nodes) < 2 {
		return incs
	}
	var out []incident
	for _, inc := range incs {
		if slices.Contains(nodes, inc.Node) {
			out = append(out, inc)
		}
	}
	return out
}

// completeIncidents adds the earlier records of incidents that began
// before --since, so that OPENED and REASON are the incident's, not those
// of its first step in the window. One query per such incident: few, since
// an incident lasts minutes.
func completeIncidents(ctx context.Context, r audit.Reader, recs []audit.Record) ([]audit.Record, error) {
	first := map[string]audit.Kind{}
	for i := range recs {
		if _, ok := first[recs[i].Incident]; !ok && recs[i].Incident != "" {
			first[recs[i].Incident] = recs[i].Kind
		}
	}
	have := map[uint64]bool{}
	for _, rec := range recs {
		have[rec.Seq] = true
	}
	for inc, k := range first {
		if k == audit.Detected {
			continue
		}
		more, err := r.Query(ctx, audit.Filter{Incident: inc, Limit: -1})
		if err != nil {
			return nil, err
		}
		for _, m := range more {
			if !have[m.Seq] {
				have[m.Seq] = true
				recs = append(recs, m)
			}
		}
	}
	slices.SortFunc(recs, func(a, b audit.Record) int { return cmp.Compare(a.Seq, b.Seq) })
	return recs, nil
}

// summarize groups records (in seq order) by incident, newest first.
// Records of no incident are left out.
func summarize(recs []audit.Record) []incident {
	byName := map[string]*incident{}
	var out []*incident
	for i := range recs {
		r := &recs[i]
		if r.Incident == "" {
			continue
		}
		inc := byName[r.Incident]
		if inc == nil {
			inc = &incident{Incident: r.Incident, Node: r.Node, Opened: r.Time}
			byName[r.Incident] = inc
			out = append(out, inc)
		}
		inc.Records++
		inc.Last = r.Time
		if r.Action != "" {
			inc.Action = r.Action
		}
		// The reason an incident opened is Detected's; a later reason
		// (a rule, a PDB) is kept only when Detected's is missing.
		if r.Reason != "" && (r.Kind == audit.Detected || inc.Reason == "") {
			inc.Reason = r.Reason
		}
		switch r.Kind {
		case audit.Succeeded, audit.Failed, audit.Cancelled:
			inc.Ended, inc.Outcome, inc.duration = true, string(r.Kind), r.Duration
		default:
			if !inc.Ended {
				inc.Outcome = cmp.Or(r.Phase, string(r.Kind))
			}
		}
	}
	res := make([]incident, 0, len(out))
	for _, inc := range out {
		if inc.duration == 0 {
			inc.duration = inc.Last.Sub(inc.Opened)
		}
		inc.Duration = inc.duration.String()
		res = append(res, *inc)
	}
	slices.SortStableFunc(res, func(a, b incident) int {
		return cmp.Or(b.Opened.Compare(a.Opened), strings.Compare(a.Incident, b.Incident))
	})
	return res
}

func writeIncidentTable(out io.Writer, incs []incident, now time.Time, wide bool) error {
	if len(incs) == 0 {
		_, err := fmt.Fprintln(out, "no incidents")
		return err
	}
	// Reasons come from the audit log, which records what others wrote.
	tw := newTable(termsafe.NewWriter(out))
	header := "INCIDENT\tNODE\tOPENED\tACTION\tOUTCOME\tDURATION\tREASON"
	if wide {
		header += "\tLAST\tRECORDS"
	}
	fmt.Fprintln(tw, header)
	for _, inc := range incs {
		d := inc.duration
		if d >= time.Second {
			d = d.Round(time.Second)
		}
		line := fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s\t%s", inc.Incident, orDash(inc.Node),
			duration.HumanDuration(now.Sub(inc.Opened)), orDash(inc.Action), orDash(inc.Outcome), d, orDash(termsafe.Line(inc.Reason)))
		if wide {
			line += fmt.Sprintf("\t%s\t%d", duration.HumanDuration(now.Sub(inc.Last)), inc.Records)
		}
		fmt.Fprintln(tw, line)
	}
	return tw.Flush()
}
