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
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Where the controller publishes scores on each Node. The source of truth
// is internal/remediation/score.go (ScoreAnnotation, TierLabel,
// GPUScoresAnnotation); importing it would link the whole controller into
// the CLI.
const (
	scoreAnnotation     = "gpuheal.io/health-score"
	tierLabel           = "gpuheal.io/health-tier"
	gpuScoresAnnotation = "gpuheal.io/gpu-health-scores"
)

// kubeOptions find the cluster as kubectl does: --kubeconfig, else
// $KUBECONFIG, else ~/.kube/config, else in-cluster.
type kubeOptions struct {
	kubeconfig string
	context    string
}

func (o *kubeOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
	fs.StringVar(&o.context, "context", "", "kubeconfig context (default: the current one)")
}

func (o *kubeOptions) restConfig() (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules,
		&clientcmd.ConfigOverrides{CurrentContext: o.context}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading Kubernetes config: %w", err)
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = "gpuheal-cli"
	}
	return cfg, nil
}

type scoreOptions struct {
	kube   kubeOptions
	node   string
	output string
}

func newScoreCommand(out io.Writer) *cobra.Command {
	o := &scoreOptions{}
	cmd := &cobra.Command{
		Use:   "score [--node N] [-o table|json]",
		Short: "Health score and tier of every node, worst first",
		Long: `Reads the health score (annotation gpuheal.io/health-score), the tier (label
gpuheal.io/health-tier) and the per-GPU scores (annotation
gpuheal.io/gpu-health-scores) that the controller publishes on each Node, and
prints them worst first; nodes not scored yet come last. See docs/health-score.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.output != "table" && o.output != "json" {
				return fmt.Errorf("-o %q: want table or json", o.output)
			}
			return runScore(cmd.Context(), out, o)
		},
	}
	o.kube.addFlags(cmd.Flags())
	cmd.Flags().StringVar(&o.node, "node", "", "only this node")
	cmd.Flags().StringVarP(&o.output, "output", "o", "table", "table or json")
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

func runScore(ctx context.Context, out io.Writer, o *scoreOptions) error {
	cfg, err := o.kube.restConfig()
	if err != nil {
		return err
	}
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("connecting to %s: %w", cfg.Host, err)
	}
	var nodes []corev1.Node
	if o.node != "" {
		var n corev1.Node
		if err := c.Get(ctx, client.ObjectKey{Name: o.node}, &n); err != nil {
			return fmt.Errorf("reading node %s: %w", o.node, err)
		}
		nodes = append(nodes, n)
	} else {
		var list corev1.NodeList
		if err := c.List(ctx, &list); err != nil {
			return fmt.Errorf("listing nodes: %w", err)
		}
		nodes = list.Items
	}
	rows := make([]nodeScore, 0, len(nodes))
	for i := range nodes {
		rows = append(rows, scoreOf(&nodes[i]))
	}
	sortScores(rows)
	if o.output == "json" {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	return writeScoreTable(out, rows)
}

func scoreOf(n *corev1.Node) nodeScore {
	s := nodeScore{Node: n.Name, Tier: n.Labels[tierLabel], ScoreText: n.Annotations[scoreAnnotation]}
	if v, err := strconv.ParseFloat(s.ScoreText, 64); err == nil && !math.IsNaN(v) {
		s.Score = &v
	}
	s.GPUs = parseGPUScores(n.Annotations[gpuScoresAnnotation])
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
		return cmp.Or(compareScores(a.Score, b.Score), strings.Compare(a.Node, b.Node))
	})
}

// compareScores orders the lower score first and a missing one last.
func compareScores(a, b *float64) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return 1
	case b == nil:
		return -1
	}
	return cmp.Compare(*a, *b)
}

func writeScoreTable(out io.Writer, rows []nodeScore) error {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
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

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
