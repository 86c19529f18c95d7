// Package fleetview is the one answer to "how is each GPU node doing?":
// from Nodes and NodeRemediations it makes one row per node (health, GPUs,
// score and tier, open incident) with one of five states, and counts them.
// `gpuheal status`, the status page, the demo's live view and the soak's
// sampler all read the fleet through it, so they agree on what a state
// means and share one JSON shape.
//
// It reads only what the objects say (no API calls, no clock), so that a
// caller with a cache, a plain list or a test fixture gets the same view.
package fleetview

import (
	"time"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
)

// State sums a node up.
type State string

// States, worst first. The first that holds is the node's.
const (
	// StateUnhealthy: the agent's GPU or kernel condition (either name,
	// ConditionTypes) is False,
	// or the kubelet's Ready is False or Unknown. A condition not reported
	// yet is no fault: a node the agent has not reached is not sick.
	StateUnhealthy State = "unhealthy"
	// StateRemediating: an incident (a NodeRemediation not ended) is open.
	StateRemediating State = "remediating"
	// StateCordoned: unschedulable, by gpuheal or anyone, with no incident.
	StateCordoned State = "cordoned"
	// StateWarning: in service, but the agent reports active warnings or
	// fewer healthy GPUs than the node has.
	StateWarning State = "warning"
	// StateHealthy: none of the above.
	StateHealthy State = "healthy"
)

// States lists every state, worst first.
var States = []State{StateUnhealthy, StateRemediating, StateCordoned, StateWarning, StateHealthy}

// Rank orders states, worst (0) first; an unknown state ranks last.
func (s State) Rank() int {
	for i, t := range States {
		if t == s {
			return i
		}
	}
	return len(States)
}

// InService reports whether the node takes work (healthy or merely warned).
func (s State) InService() bool { return s == StateHealthy || s == StateWarning }

// View is the fleet: the JSON of `gpuheal status -o json` and of the status
// page's /status/api/fleet.
type View struct {
	Summary Summary `json:"summary"`
	// Nodes, sorted by name (SortWorstFirst reorders them).
	Nodes []Row `json:"nodes"`
	// Policies are the RemediationPolicies' breakers; empty when the
	// caller did not read them.
	Policies []Policy `json:"policies"`
}

// Summary counts nodes by state, and GPUs.
type Summary struct {
	Nodes       int `json:"nodes"`
	Unhealthy   int `json:"unhealthy"`
	Remediating int `json:"remediating"`
	Cordoned    int `json:"cordoned"`
	Warning     int `json:"warning"`
	Healthy     int `json:"healthy"`
	GPUs        int `json:"gpus"`
	// HealthyGPUs counts only nodes that publish the healthy-count label.
	HealthyGPUs int `json:"healthyGPUs"`
}

// Count is how many nodes are in state s.
func (s Summary) Count(st State) int {
	switch st {
	case StateUnhealthy:
		return s.Unhealthy
	case StateRemediating:
		return s.Remediating
	case StateCordoned:
		return s.Cordoned
	case StateWarning:
		return s.Warning
	case StateHealthy:
		return s.Healthy
	}
	return 0
}

// Row is one node.
type Row struct {
	Name  string `json:"name"`
	State State  `json:"state"`
	// HealthyGPUs is the agent's gpu-healthy-count label; absent when the
	// agent has not said.
	HealthyGPUs *int `json:"healthyGPUs,omitempty"`
	// GPUs is the node's nvidia.com/gpu capacity, else its GPU-count label.
	GPUs int `json:"gpus"`
	// Conditions are those a state is read from (the agent's two and the
	// kubelet's Ready), as reported; a missing one is left out.
	Conditions []Condition `json:"conditions"`
	// ActiveWarnings is how many warning problems the agent has active
	// (a count; the node's warning Events name them).
	ActiveWarnings int `json:"activeWarnings,omitempty"`
	// Unschedulable: cordoned, by gpuheal or anyone.
	Unschedulable bool     `json:"unschedulable"`
	Tier          string   `json:"tier,omitempty"`
	Score         *float64 `json:"score,omitempty"`
	// Incident, Phase and Action of the node's open NodeRemediation.
	Incident string          `json:"incident,omitempty"`
	Phase    v1alpha1.Phase  `json:"phase,omitempty"`
	Action   v1alpha1.Action `json:"action,omitempty"`
	// Created is when the Node object was made (its age).
	Created time.Time `json:"created,omitzero"`
}

// Condition is one of the node conditions a state is read from.
type Condition struct {
	Type    string    `json:"type"`
	Status  string    `json:"status"`
	Reason  string    `json:"reason,omitempty"`
	Message string    `json:"message,omitempty"`
	Since   time.Time `json:"since,omitzero"`
}

// Bad reports whether this condition makes its node unhealthy.
func (c Condition) Bad() bool {
	return c.Status == "False" || (c.Type == "Ready" && c.Status == "Unknown")
}

// Problems names each bad condition: "GPUHealAcceleratorHealthy=False
// (NvidiaXID79Error)".
func (r Row) Problems() []string {
	var out []string
	for _, c := range r.Conditions {
		if !c.Bad() {
			continue
		}
		p := c.Type + "=" + c.Status
		if c.Reason != "" {
			p += " (" + c.Reason + ")"
		}
		out = append(out, p)
	}
	return out
}
