package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"

	gpuhealv1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/fleetview"
)

type scoreOptions struct {
	kube *cluster
	out  *printer
	node string // the hidden --node of old; NODE arguments replace it
}

func newScoreCommand(out io.Writer, k *cluster) *cobra.Command {
	o := &scoreOptions{kube: k}
	cmd := &cobra.Command{
		Use:   "score [NODE...] [-o table|wide|json|yaml]",
		Short: "Health score and tier of every node (or of each NODE), worst first",
		Long: `Reads the health score (annotation ` + gpuhealv1.AnnotationHealthScore + `), the tier (label
` + gpuhealv1.LabelHealthTier + `) and the per-GPU scores (annotation
` + gpuhealv1.AnnotationGPUHealthScores + `) that the controller publishes on each Node, and
prints them worst first; nodes not scored yet come last. See docs/health-score.md.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.node != "" {
				args = append(args, o.node)
			}
			return runScore(cmd.Context(), out, o, args)
		},
	}
	o.out = addPrinter(cmd)
	cmd.Flags().StringVar(&o.node, "node", "", "only this node (use NODE arguments)")
	_ = cmd.Flags().MarkHidden("node")
	return cmd
}

// nodeScore is one row; Score is nil when the node has none (yet).
type nodeScore struct {
	Node      string     `json:"node"`
	Score     *float64   `json:"score"`
	ScoreText string     `json:"scoreText,omitempty"`
	Tier      string     `json:"tier,omitempty"`
	GPUs      []gpuScore `json:"gpus,omitempty"`
}

type gpuScore struct {
	UUID  string  `json:"uuid"`
	Score float64 `json:"score"`
}

func runScore(ctx context.Context, out io.Writer, o *scoreOptions, names []string) error {
	c, err := o.kube.client()
	if err != nil {
		return err
	}
	nodes, err := readNodes(ctx, c, "", names)
	if err != nil {
		return err
	}
	rows := make([]nodeScore, 0, len(nodes))
	for i := range nodes {
		rows = append(rows, scoreOf(&nodes[i]))
	}
	sortScores(rows)
	return o.out.print(out, rows, func(w io.Writer, _ bool) error { return writeScoreTable(w, rows) })
}

func scoreOf(n *corev1.Node) nodeScore {
	s := nodeScore{Node: n.Name, Tier: n.Labels[gpuhealv1.LabelHealthTier], ScoreText: n.Annotations[gpuhealv1.AnnotationHealthScore]}
	if v, err := strconv.ParseFloat(s.ScoreText, 64); err == nil && !math.IsNaN(v) {
		s.Score = &v
	}
	s.GPUs = parseGPUScores(n.Annotations[gpuhealv1.AnnotationGPUHealthScores])
	return s
}

// parseGPUScores reads the per-GPU annotation, a JSON object UUID → score
// (the controller writes the score as text, "81.9"; a number is accepted
// too). What does not parse is left out, worst first.
func parseGPUScores(text string) []gpuScore {
	if text == "" {
		return nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal([]byte(text), &m) != nil {
		return nil
	}
	var out []gpuScore
	for uuid, raw := range m {
		var txt string
		if json.Unmarshal(raw, &txt) != nil {
			txt = string(raw)
		}
		if v, err := strconv.ParseFloat(txt, 64); err == nil && !math.IsNaN(v) {
			out = append(out, gpuScore{UUID: uuid, Score: v})
		}
	}
	slices.SortFunc(out, func(a, b gpuScore) int {
		return cmp.Or(cmp.Compare(a.Score, b.Score), strings.Compare(a.UUID, b.UUID))
	})
	return out
}

// sortScores puts the worst node first and unscored nodes last.
func sortScores(rows []nodeScore) {
	slices.SortFunc(rows, func(a, b nodeScore) int {
		return cmp.Or(fleetview.CompareScores(a.Score, b.Score), strings.Compare(a.Node, b.Node))
	})
}

func writeScoreTable(out io.Writer, rows []nodeScore) error {
	tw := newTable(out)
	fmt.Fprintln(tw, "NODE\tSCORE\tTIER\tGPUS")
	for _, r := range rows {
		score := "-"
		switch {
		case r.Score != nil:
			score = strconv.FormatFloat(*r.Score, 'f', 1, 64)
		case r.ScoreText != "":
			score = r.ScoreText + " (unreadable)"
		}
		gpus := make([]string, 0, len(r.GPUs))
		for _, g := range r.GPUs {
			gpus = append(gpus, g.UUID+"="+strconv.FormatFloat(g.Score, 'f', 1, 64))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Node, score, orDash(r.Tier), orDash(strings.Join(gpus, ",")))
	}
	return tw.Flush()
}
