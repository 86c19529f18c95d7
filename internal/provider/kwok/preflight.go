package kwok

import (
	"context"

	corev1 "k8s.io/api/core/v1"
)

// Preflight always passes: the simulated cloud needs only the Node rights
// the controller has anyway, and says so.
func (p *Provider) Preflight(context.Context, []*corev1.Node) (string, error) {
	return "provider kwok is a simulated cloud; it needs no permission beyond the controller's Node rights", nil
}
