// Package none is the provider for clusters where people repair hardware by
// hand: the controller cordons and drains the node, and nothing more. Every
// action says so, so a policy that asks none to reboot or replace ends in a
// clear "not supported" rather than a silent wait.
package none

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuheal/gpuheal/internal/provider"
)

// Provider reboots and replaces nothing.
type Provider struct{}

var _ provider.Provider = Provider{}

// New returns the none provider.
func New() Provider { return Provider{} }

// Name is provider.None.
func (Provider) Name() string { return provider.None }

// Reboot is not supported: someone has to walk to the machine.
func (Provider) Reboot(_ context.Context, node *corev1.Node, _ string) (string, error) {
	return "", fmt.Errorf("rebooting node %s with provider %s: %w", node.Name, provider.None, provider.ErrUnsupported)
}

// Replace is not supported: someone has to swap the machine.
func (Provider) Replace(_ context.Context, node *corev1.Node, _ string) (string, error) {
	return "", fmt.Errorf("replacing node %s with provider %s: %w", node.Name, provider.None, provider.ErrUnsupported)
}

// Status is always Unknown: none has no view of the machine.
func (Provider) Status(context.Context, *corev1.Node) (provider.InstanceStatus, error) {
	return provider.InstanceStatus{State: provider.StateUnknown, Detail: "provider none does not track machines"}, nil
}

// Preflight always passes: none has nothing to prove, and says so.
func (Provider) Preflight(context.Context, []*corev1.Node) (string, error) {
	return "provider none acts on nothing (cordon and drain only), so there is nothing to prove", nil
}
