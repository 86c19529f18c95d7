package statuspage

import (
	"time"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/fleetview"
)

// Incidents is the JSON of /status/api/incidents and of the "incidents"
// event.
type Incidents struct {
	// Items, newest first, at most Options.MaxIncidents.
	Items []Incident `json:"items"`
	// Total is how many NodeRemediations exist, shown or not.
	Total int `json:"total"`
}

// Incident is one NodeRemediation on the timeline.
type Incident struct {
	Name      string          `json:"name"`
	Node      string          `json:"node"`
	Policy    string          `json:"policy"`
	Condition string          `json:"condition"`
	Reason    string          `json:"reason,omitempty"`
	Action    v1alpha1.Action `json:"action,omitempty"`
	Phase     v1alpha1.Phase  `json:"phase"`
	DryRun    bool            `json:"dryRun,omitempty"`
	// Detected is when the node's condition turned bad (the trigger's
	// lastTransitionTime); Opened when the incident entered its first
	// phase (or was created, before it has one).
	Detected time.Time `json:"detected"`
	Opened   time.Time `json:"opened"`
	// Finished is when a terminal phase was entered.
	Finished *time.Time `json:"finished,omitempty"`
	// TimeToRecoverSeconds, for a Succeeded incident: from Detected to
	// Succeeded, as the gpuheal_time_to_recover_seconds metric counts it.
	TimeToRecoverSeconds *float64 `json:"timeToRecoverSeconds,omitempty"`
	Replacement          string   `json:"replacement,omitempty"`
}

func incidentOf(nr *v1alpha1.NodeRemediation) Incident {
	out := Incident{
		Name: nr.Name, Node: nr.Spec.NodeName, Policy: nr.Spec.PolicyName,
		Condition: nr.Spec.Trigger.Type, Reason: nr.Spec.Trigger.Reason,
		Action: nr.Status.Action, Phase: nr.Status.Phase, DryRun: nr.Status.DryRun,
		Detected: nr.Spec.Trigger.Since.Time, Opened: fleetview.Opened(nr),
		Replacement: nr.Status.Replacement,
	}
	if out.Phase == "" {
		out.Phase = v1alpha1.PhasePending
	}
	if !out.Phase.Terminal() {
		return out
	}
	// The last entry of the terminal phase: a phase is recorded before
	// the next one starts, so it is the end of the incident.
	for i := len(nr.Status.Phases) - 1; i >= 0; i-- {
		pt := nr.Status.Phases[i]
		if pt.Phase != out.Phase {
			continue
		}
		t := pt.Time.Time
		out.Finished = &t
		if out.Phase == v1alpha1.PhaseSucceeded && !out.Detected.IsZero() && !t.Before(out.Detected) {
			s := t.Sub(out.Detected).Seconds()
			out.TimeToRecoverSeconds = &s
		}
		break
	}
	return out
}
