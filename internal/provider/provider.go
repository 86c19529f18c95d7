// Package provider is the one interface through which the controller reboots
// or replaces a node: the node's cloud or cluster manager (aws, karpenter,
// clusterapi), a simulated cloud for tests and the demo (kwok), or none.
//
// Every call must be safe to repeat: the controller records that it is about
// to act before it calls, and after a crash it calls again with the same
// token. A provider therefore either passes the token to a cloud that
// de-duplicates on it, or first looks whether the action already happened.
package provider

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Names of the providers, as written in a RemediationPolicy.
const (
	AWS        = "aws"
	Karpenter  = "karpenter"
	ClusterAPI = "clusterapi"
	Kwok       = "kwok"
	None       = "none"
)

// Provider reboots and replaces nodes.
type Provider interface {
	// Name is one of the constants above.
	Name() string
	// Reboot asks for the node's machine to restart. token identifies the
	// incident (the NodeRemediation's name) so a repeated call is
	// recognised. It returns the provider's request id, if it has one.
	Reboot(ctx context.Context, node *corev1.Node, token string) (requestID string, err error)
	// Replace asks for the node's machine to be taken away and a new one
	// to take its place. Repeating it for the same token must never cause
	// a second replacement.
	Replace(ctx context.Context, node *corev1.Node, token string) (requestID string, err error)
	// Status reports what the provider knows of the node's machine.
	Status(ctx context.Context, node *corev1.Node) (InstanceStatus, error)
	// Preflight proves that the provider could act on these nodes (those
	// of one policy that use it; possibly none) without acting: the
	// identity it acts as, and each permission it needs, tried where the
	// cloud offers a dry run. It returns what it proved, in words, or an
	// error; a *PreflightError carries the reason for the policy's
	// ProviderReady condition.
	Preflight(ctx context.Context, nodes []*corev1.Node) (string, error)
}

// ScaleInProtector is implemented by providers that can keep a node's
// machine out of scale-in, so that a shrinking group removes the least
// trusted machines first. The controller protects gold nodes, and lifts the
// protection when a node drops below gold, only where the operator opts in;
// a provider that lacks it (or returns ErrUnsupported for a node) just
// leaves scale-in to the group's own policy.
//
// Like every call here it must be safe to repeat: setting the protection a
// machine already has is a no-op.
type ScaleInProtector interface {
	SetScaleInProtection(ctx context.Context, node *corev1.Node, protected bool) error
}

// State is the lifecycle state of a machine as its provider sees it.
type State string

// States a provider reports.
const (
	StateUnknown     State = "Unknown"
	StateRunning     State = "Running"
	StateRebooting   State = "Rebooting"
	StateTerminating State = "Terminating"
	StateGone        State = "Gone"
)

// InstanceStatus is a provider's view of one machine.
type InstanceStatus struct {
	State State
	// ID is the provider's name for the machine (EC2 instance id,
	// NodeClaim or Machine name).
	ID string
	// Replacement names the node that replaces this one, when the
	// provider can tell (kwok can; a cloud's auto scaling group cannot).
	Replacement string
	// Detail is free text for events and logs.
	Detail string
}

// ErrUnsupported is returned by a provider that cannot do an action (none
// cannot reboot or replace anything).
var ErrUnsupported = errors.New("action not supported by this provider")

// ErrNotFound says the provider has no machine for the node (for karpenter,
// no NodeClaim owns it; for clusterapi, no Machine).
var ErrNotFound = errors.New("no machine found for node")

// ErrNotOwned says the node points at a machine (a NodeClaim, a Machine)
// that the machine's own status does not tie to this node, or one gpuheal
// must never delete (a control-plane Machine). A node's annotations and
// owner references can be written by its kubelet or agent, so a provider
// deletes only what the machine's status proves is this node's, and
// refuses the rest with this error.
var ErrNotOwned = errors.New("machine is not proven to belong to this node")

// Set picks a provider per node.
type Set map[string]Provider

// For returns the provider that acts on the node for a policy naming name
// (see Resolve).
func (s Set) For(name string, node *corev1.Node) (Provider, error) {
	name = s.Resolve(name, node)
	if reboot, replace, ok := strings.Cut(name, splitSep); ok {
		rb, rp := s[reboot], s[replace]
		if rb != nil && rp != nil {
			return Split{Rebooter: rb, Replacer: rp}, nil
		}
	}
	p, ok := s[name]
	if !ok {
		return nil, fmt.Errorf("provider %q is not configured in this controller (configured: %s)", name, s.names())
	}
	return p, nil
}

// Resolve names the provider that acts on the node for a policy naming
// name. Empty means guess (Guess). A node Karpenter launched on EC2 is in
// no Auto Scaling group, so aws could reboot it but never replace it: for
// such a node, guessed or named aws becomes "aws+karpenter" (EC2 reboots,
// the NodeClaim replaces) when the karpenter provider is configured.
func (s Set) Resolve(name string, node *corev1.Node) string {
	if name == "" {
		name = Guess(node)
	}
	if name == AWS && node != nil && KarpenterLaunched(node) && s[Karpenter] != nil {
		return AWS + splitSep + Karpenter
	}
	return name
}

func (s Set) names() string {
	var out []string
	for n := range s {
		out = append(out, n)
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

// FromProviderID guesses the provider from a node's spec.providerID scheme.
func FromProviderID(id string) string {
	scheme, _, ok := strings.Cut(id, "://")
	if !ok {
		return None
	}
	switch scheme {
	case "aws":
		return AWS
	case "kwok":
		return Kwok
	}
	return None
}
