package statuspage

import (
	"cmp"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
)

// Keys read from Nodes. They repeat the agent's and the controller's
// constants instead of importing them, so that the controller's wiring can
// import this package; a test checks that they agree.
const (
	HealthyGPUsLabel = "gpuheal.io/gpu-healthy-count" // agent.HealthyGPUsLabel
	ScoreAnnotation  = "gpuheal.io/health-score"      // remediation.ScoreAnnotation
	TierLabel        = "gpuheal.io/health-tier"       // remediation.TierLabel
	GPUResource      = corev1.ResourceName("nvidia.com/gpu")
)

// Node conditions shown on a tile: the agent's two and the kubelet's.
const (
	ConditionGPU    = "AcceleratedHardwareReady"
	ConditionKernel = "KernelReady"
)

var shownConditions = []corev1.NodeConditionType{ConditionGPU, ConditionKernel, corev1.NodeReady}

// State is a tile's color.
type State string

// States, worst first.
const (
	// StateUnhealthy (red): AcceleratedHardwareReady or KernelReady is
	// False, or the kubelet's Ready is False or Unknown.
	StateUnhealthy State = "unhealthy"
	// StateRemediating (amber): the conditions are fine but the node is
	// cordoned or an incident is open on it.
	StateRemediating State = "remediating"
	// StateHealthy (green): none of the above. A condition not reported
	// yet counts as fine: a node the agent has not reached is no fault.
	StateHealthy State = "healthy"
)

// Fleet is the JSON of /status/api/fleet and of the "fleet" event.
type Fleet struct {
	Summary  Summary  `json:"summary"`
	Nodes    []Node   `json:"nodes"`
	Policies []Policy `json:"policies"`
}

// Summary counts nodes by state, and GPUs.
type Summary struct {
	Nodes       int `json:"nodes"`
	Healthy     int `json:"healthy"`
	Unhealthy   int `json:"unhealthy"`
	Remediating int `json:"remediating"`
	GPUs        int `json:"gpus"`
	// HealthyGPUs counts only nodes that publish the healthy-count label.
	HealthyGPUs int `json:"healthyGPUs"`
}

// Node is one tile.
type Node struct {
	Name  string `json:"name"`
	State State  `json:"state"`
	// HealthyGPUs is the agent's label; absent when it has not said.
	HealthyGPUs *int `json:"healthyGPUs,omitempty"`
	// GPUs is the node's nvidia.com/gpu capacity.
	GPUs       int         `json:"gpus"`
	Conditions []Condition `json:"conditions"`
	Tier       string      `json:"tier,omitempty"`
	Score      *float64    `json:"score,omitempty"`
	// Unschedulable: cordoned, by us or anyone.
	Unschedulable bool `json:"unschedulable"`
	// Incident and Phase of the node's open NodeRemediation, if any.
	Incident string         `json:"incident,omitempty"`
	Phase    v1alpha1.Phase `json:"phase,omitempty"`
}

// Condition is one of the node conditions that decide the tile's color.
type Condition struct {
	Type    string    `json:"type"`
	Status  string    `json:"status"`
	Reason  string    `json:"reason,omitempty"`
	Message string    `json:"message,omitempty"`
	Since   time.Time `json:"since,omitzero"`
}

// Policy is one RemediationPolicy's breaker, as its status last said.
type Policy struct {
	Name           string `json:"name"`
	MatchedNodes   int32  `json:"matchedNodes"`
	UnhealthyNodes int32  `json:"unhealthyNodes"`
	InFlight       int32  `json:"inFlight"`
	BreakerOpen    bool   `json:"breakerOpen"`
	// Message is the BreakerOpen condition's, which gives the limit.
	Message string `json:"message,omitempty"`
	Paused  bool   `json:"paused"`
	DryRun  bool   `json:"dryRun"`
}

// fleetOf builds the fleet view. open maps a node to its open incident.
func fleetOf(nodes []corev1.Node, open map[string]*v1alpha1.NodeRemediation, policies []v1alpha1.RemediationPolicy) Fleet {
	f := Fleet{Nodes: make([]Node, 0, len(nodes)), Policies: make([]Policy, 0, len(policies))}
	for i := range nodes {
		n := nodeOf(&nodes[i], open[nodes[i].Name])
		f.Nodes = append(f.Nodes, n)
		f.Summary.Nodes++
		f.Summary.GPUs += n.GPUs
		if n.HealthyGPUs != nil {
			f.Summary.HealthyGPUs += *n.HealthyGPUs
		}
		switch n.State {
		case StateUnhealthy:
			f.Summary.Unhealthy++
		case StateRemediating:
			f.Summary.Remediating++
		default:
			f.Summary.Healthy++
		}
	}
	// Sorted by name, so that a tile keeps its place on the map.
	slices.SortFunc(f.Nodes, func(a, b Node) int { return cmp.Compare(a.Name, b.Name) })
	for i := range policies {
		f.Policies = append(f.Policies, policyOf(&policies[i]))
	}
	slices.SortFunc(f.Policies, func(a, b Policy) int { return cmp.Compare(a.Name, b.Name) })
	return f
}

func nodeOf(n *corev1.Node, open *v1alpha1.NodeRemediation) Node {
	out := Node{Name: n.Name, Tier: n.Labels[TierLabel], Unschedulable: n.Spec.Unschedulable, Conditions: []Condition{}}
	if q, ok := n.Status.Capacity[GPUResource]; ok {
		out.GPUs = int(q.Value())
	}
	if v, err := strconv.Atoi(n.Labels[HealthyGPUsLabel]); err == nil && v >= 0 {
		out.HealthyGPUs = &v
	}
	if v, err := strconv.ParseFloat(n.Annotations[ScoreAnnotation], 64); err == nil {
		out.Score = &v
	}
	unhealthy := false
	for _, t := range shownConditions {
		for _, c := range n.Status.Conditions {
			if c.Type != t {
				continue
			}
			out.Conditions = append(out.Conditions, Condition{Type: string(c.Type), Status: string(c.Status),
				Reason: c.Reason, Message: c.Message, Since: c.LastTransitionTime.Time})
			bad := c.Status == corev1.ConditionFalse || (t == corev1.NodeReady && c.Status == corev1.ConditionUnknown)
			unhealthy = unhealthy || bad
			break
		}
	}
	if open != nil {
		out.Incident, out.Phase = open.Name, open.Status.Phase
		if out.Phase == "" {
			out.Phase = v1alpha1.PhasePending
		}
	}
	switch {
	case unhealthy:
		out.State = StateUnhealthy
	case out.Unschedulable || open != nil:
		out.State = StateRemediating
	default:
		out.State = StateHealthy
	}
	return out
}

func policyOf(p *v1alpha1.RemediationPolicy) Policy {
	out := Policy{Name: p.Name, MatchedNodes: p.Status.MatchedNodes, UnhealthyNodes: p.Status.UnhealthyNodes,
		InFlight: p.Status.InFlight, BreakerOpen: p.Status.BreakerOpen, Paused: p.Spec.Paused, DryRun: p.Spec.DryRun}
	for _, c := range p.Status.Conditions {
		if c.Type == "BreakerOpen" {
			out.Message = c.Message
		}
	}
	return out
}
