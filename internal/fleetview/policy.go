package fleetview

import (
	"slices"
	"strings"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
)

// Policy is one RemediationPolicy's breaker and provider readiness, as its
// status last said.
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
	// ProviderReady is the ProviderReady condition's status (True,
	// False; empty before the first preflight), with its reason and
	// message: whether the policy's provider proved it can act.
	ProviderReady   string `json:"providerReady,omitempty"`
	ProviderReason  string `json:"providerReason,omitempty"`
	ProviderMessage string `json:"providerMessage,omitempty"`
}

// PoliciesOf is the breakers of policies, sorted by name.
func PoliciesOf(policies []v1alpha1.RemediationPolicy) []Policy {
	out := make([]Policy, 0, len(policies))
	for i := range policies {
		p := &policies[i]
		pol := Policy{Name: p.Name, MatchedNodes: p.Status.MatchedNodes, UnhealthyNodes: p.Status.UnhealthyNodes,
			InFlight: p.Status.InFlight, BreakerOpen: p.Status.BreakerOpen, Paused: p.Spec.Paused, DryRun: p.Spec.DryRun}
		for _, c := range p.Status.Conditions {
			switch c.Type {
			case v1alpha1.ConditionBreakerOpen:
				pol.Message = c.Message
			case v1alpha1.ConditionProviderReady:
				pol.ProviderReady, pol.ProviderReason, pol.ProviderMessage = string(c.Status), c.Reason, c.Message
			}
		}
		out = append(out, pol)
	}
	slices.SortFunc(out, func(a, b Policy) int { return strings.Compare(a.Name, b.Name) })
	return out
}
