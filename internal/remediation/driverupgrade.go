package remediation

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
)

// inDriverUpgrade reports whether the GPU Operator is upgrading the node's
// driver: the node is in maintenance, cordoned and drained by the operator
// and its GPUs away on purpose. No incident opens for it and the breakers
// do not count it, or a rolling driver upgrade across a fleet would trip
// the maxUnhealthy breaker and, all nodes sharing one driver version, the
// cause breaker.
func inDriverUpgrade(n *corev1.Node) bool {
	return v1alpha1.DriverUpgradeMaintenance(n.Labels[v1alpha1.LabelNvidiaDriverUpgradeState])
}

// nodeInDriverUpgrade is inDriverUpgrade of the named node as the cache
// has it; a node not found is not in an upgrade.
func nodeInDriverUpgrade(ctx context.Context, c client.Reader, name string) (bool, error) {
	var n corev1.Node
	if err := c.Get(ctx, client.ObjectKey{Name: name}, &n); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	return inDriverUpgrade(&n), nil
}

// reportDriverUpgrade emits one Event when a node enters a driver upgrade,
// not one per reconcile, and forgets the node once the upgrade is over.
func (r *nodeReconciler) reportDriverUpgrade(node *corev1.Node) bool {
	upgrading := inDriverUpgrade(node)
	r.mu.Lock()
	seen := r.upgrading[node.Name]
	if upgrading {
		r.upgrading[node.Name] = true
	} else {
		delete(r.upgrading, node.Name)
	}
	r.mu.Unlock()
	if upgrading && !seen {
		r.recorder.Eventf(node, nil, corev1.EventTypeNormal, v1alpha1.EventReasonDriverUpgradeInProgress, "Skip",
			"the GPU Operator is upgrading the driver (%s=%s): no incident opens and the breakers do not count the node until the upgrade ends",
			v1alpha1.LabelNvidiaDriverUpgradeState, node.Labels[v1alpha1.LabelNvidiaDriverUpgradeState])
	}
	return upgrading
}
