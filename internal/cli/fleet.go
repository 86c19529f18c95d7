package cli

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gpuhealv1 "github.com/gpuheal/gpuheal/api/v1alpha1"
)

// What the agent publishes on each Node (internal/agent/publish.go is the
// source of truth; importing it would link the agent into the CLI).
const (
	healthyGPUsLabel         = "gpuheal.io/gpu-healthy-count"
	activeWarningsAnnotation = "gpuheal.io/active-warnings"
	gpuCountLabel            = "nvidia.com/gpu.count"
	gpuProductLabel          = "nvidia.com/gpu.product"
	// cordonedByAnnotation is the controller's mark on a node it cordoned
	// (internal/remediation/cordon.go).
	cordonedByAnnotation = "gpuheal.io/cordoned-by"
	gpuResource          = corev1.ResourceName("nvidia.com/gpu")
)

// conditionsShown are the node conditions a GPU node's health is read
// from: the agent's two and the kubelet's own.
var conditionsShown = []corev1.NodeConditionType{"AcceleratedHardwareReady", "KernelReady", corev1.NodeReady}

// fleetNode is one node's row of `gpuheal status`.
type fleetNode struct {
	Node        string   `json:"node"`
	GPUsHealthy *int     `json:"gpusHealthy,omitempty"`
	GPUsTotal   int      `json:"gpusTotal"`
	Problems    []string `json:"problems,omitempty"`
	// ActiveWarnings is how many warning problems the agent has active
	// (its gpuheal.io/active-warnings annotation is a count; the warning
	// Events on the node name them).
	ActiveWarnings int      `json:"activeWarnings,omitempty"`
	Cordoned       bool     `json:"cordoned"`
	Tier           string   `json:"tier,omitempty"`
	Score          *float64 `json:"score,omitempty"`
	// Remediation is the open incident's phase and action, if any.
	Remediation string    `json:"remediation,omitempty"`
	Incident    string    `json:"incident,omitempty"`
	Created     time.Time `json:"created"`
	// State sums the row up: unhealthy, remediating, cordoned, warning or healthy.
	State string `json:"state"`
}

// Row states, worst first.
const (
	stateUnhealthy   = "unhealthy"
	stateRemediating = "remediating"
	stateCordoned    = "cordoned"
	stateWarning     = "warning"
	stateHealthy     = "healthy"
)

var stateRank = map[string]int{stateUnhealthy: 0, stateRemediating: 1, stateCordoned: 2, stateWarning: 3, stateHealthy: 4}

// fleetClient is a controller-runtime client that knows Nodes and our CRDs.
func fleetClient(k *kubeOptions) (client.Client, error) {
	cfg, err := k.restConfig()
	if err != nil {
		return nil, err
	}
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := gpuhealv1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", cfg.Host, err)
	}
	return c, nil
}

// readFleet lists the nodes the selector picks and the open incidents, and
// returns one row per node, worst first.
func readFleet(ctx context.Context, c client.Client, selector string) ([]fleetNode, error) {
	var nodes corev1.NodeList
	opts := []client.ListOption{}
	if selector != "" {
		sel, err := parseSelector(selector)
		if err != nil {
			return nil, err
		}
		opts = append(opts, client.MatchingLabelsSelector{Selector: sel})
	}
	if err := c.List(ctx, &nodes, opts...); err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	open, err := openIncidents(ctx, c)
	if err != nil {
		return nil, err
	}
	rows := make([]fleetNode, 0, len(nodes.Items))
	for i := range nodes.Items {
		rows = append(rows, fleetRow(&nodes.Items[i], open[nodes.Items[i].Name]))
	}
	sortFleet(rows)
	return rows, nil
}

// openIncidents maps node → its newest incident that has not ended. A
// cluster without our CRDs has none.
func openIncidents(ctx context.Context, c client.Client) (map[string]*gpuhealv1.NodeRemediation, error) {
	var list gpuhealv1.NodeRemediationList
	if err := c.List(ctx, &list); err != nil {
		if isNoKind(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("listing NodeRemediations: %w", err)
	}
	open := map[string]*gpuhealv1.NodeRemediation{}
	for i := range list.Items {
		r := &list.Items[i]
		if r.Status.Phase.Terminal() {
			continue
		}
		if prev := open[r.Spec.NodeName]; prev == nil || r.CreationTimestamp.After(prev.CreationTimestamp.Time) {
			open[r.Spec.NodeName] = r
		}
	}
	return open, nil
}

func fleetRow(n *corev1.Node, open *gpuhealv1.NodeRemediation) fleetNode {
	row := fleetNode{Node: n.Name, Cordoned: n.Spec.Unschedulable, Tier: n.Labels[tierLabel], Created: n.CreationTimestamp.Time}
	row.GPUsTotal = gpuTotal(n)
	if v, err := strconv.Atoi(n.Labels[healthyGPUsLabel]); err == nil {
		row.GPUsHealthy = &v
	}
	if v, err := strconv.ParseFloat(n.Annotations[scoreAnnotation], 64); err == nil {
		row.Score = &v
	}
	row.Problems = nodeProblems(n)
	if w, err := strconv.Atoi(n.Annotations[activeWarningsAnnotation]); err == nil && w > 0 {
		row.ActiveWarnings = w
	}
	if open != nil {
		phase := string(open.Status.Phase)
		if phase == "" {
			phase = string(gpuhealv1.PhasePending)
		}
		row.Remediation = phase
		if open.Status.Action != "" {
			row.Remediation += " (" + string(open.Status.Action) + ")"
		}
		row.Incident = open.Name
	}
	row.State = rowState(row)
	return row
}

// gpuTotal is the node's GPU capacity, or the GPU-count label when the
// device plugin has not reported (yet).
func gpuTotal(n *corev1.Node) int {
	if q, ok := n.Status.Capacity[gpuResource]; ok {
		return int(q.Value())
	}
	v, _ := strconv.Atoi(n.Labels[gpuCountLabel])
	return v
}

// nodeProblems names each shown condition that is not healthy:
// "AcceleratedHardwareReady=False (NvidiaXID79Error)".
func nodeProblems(n *corev1.Node) []string {
	var out []string
	for _, t := range conditionsShown {
		for _, c := range n.Status.Conditions {
			if c.Type != t || c.Status == corev1.ConditionTrue {
				continue
			}
			p := string(c.Type) + "=" + string(c.Status)
			if c.Reason != "" {
				p += " (" + c.Reason + ")"
			}
			out = append(out, p)
		}
	}
	return out
}

func rowState(r fleetNode) string {
	switch {
	case len(r.Problems) > 0:
		return stateUnhealthy
	case r.Remediation != "":
		return stateRemediating
	case r.Cordoned:
		return stateCordoned
	case r.ActiveWarnings > 0 || (r.GPUsHealthy != nil && *r.GPUsHealthy < r.GPUsTotal):
		return stateWarning
	}
	return stateHealthy
}

// sortFleet puts the worst first: by state, then lowest score (unscored
// after scored), then name.
func sortFleet(rows []fleetNode) {
	slices.SortFunc(rows, func(a, b fleetNode) int {
		return cmp.Or(cmp.Compare(stateRank[a.State], stateRank[b.State]), compareScores(a.Score, b.Score),
			strings.Compare(a.Node, b.Node))
	})
}
