package fleetview

import (
	"slices"
	"strings"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
)

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

// PoliciesOf is the breakers of policies, sorted by name.
func PoliciesOf(policies []v1alpha1.RemediationPolicy) []Policy {
	out := make([]Policy, 0, len(policies))
	for i := range policies {
		p := &policies[i]
		pol := Policy{Name: p.Name, MatchedNodes: p.Status.MatchedNodes, UnhealthyNodes: p.Status.UnhealthyNodes,
			InFlight: p.Status.InFlight, BreakerOpen: p.Status.BreakerOpen, Paused: p.Spec.Paused, DryRun: p.Spec.DryRun}
		for _, c := range p.Status.Conditions {
			if c.Type == v1alpha1.ConditionBreakerOpen {
				pol.Message = c.Message
			}
		}
		out = append(out, pol)
	}
	slices.SortFunc(out, func(a, b Policy) int { return strings.Compare(a.Name, b.Name) })
	return out
}
