package remediation

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
)

// claimReplacement picks, for a replaced node whose provider cannot name
// its successor (an Auto Scaling group, Karpenter, a MachineSet), the
// oldest node of the policy that joined after the replacement was
// requested, is Ready and healthy (replacementHealthy), and is not the
// replacement of another incident; "" when there is none yet. Claims are
// made under claimMu and remembered until the incident records them, so
// two incidents never take the same node.
func (r *remediationReconciler) claimReplacement(ctx context.Context, in *incident) (string, error) {
	requested := time.Time{}
	for _, req := range in.nr.Status.ProviderRequests {
		if req.Action == v1alpha1.ActionReplace && req.Attempt == in.nr.Status.Attempts && req.Error == "" {
			requested = req.Time.Truncate(time.Second)
			break
		}
	}
	r.claimMu.Lock()
	defer r.claimMu.Unlock()
	var incidents v1alpha1.NodeRemediationList
	if err := r.client.List(ctx, &incidents); err != nil {
		return "", fmt.Errorf("listing remediations: %w", err)
	}
	taken := map[string]bool{}
	for _, it := range incidents.Items {
		if it.Status.Replacement != "" && r.claims[it.Status.Replacement] == it.Name {
			delete(r.claims, it.Status.Replacement) // recorded: the object says it now
		}
		if it.Name != in.nr.Name && it.Status.Replacement != "" {
			taken[it.Status.Replacement] = true
		}
	}
	for node, by := range r.claims {
		if by != in.nr.Name {
			taken[node] = true
		}
	}
	var nodes corev1.NodeList
	if err := r.client.List(ctx, &nodes, client.UnsafeDisableDeepCopy); err != nil {
		return "", fmt.Errorf("listing nodes: %w", err)
	}
	var best *corev1.Node
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if taken[n.Name] || !in.policy.matches(n) || n.CreationTimestamp.Time.Before(requested) {
			continue
		}
		if ok, _ := r.replacementHealthy(in, n); !ok {
			continue
		}
		if best == nil || n.CreationTimestamp.Before(&best.CreationTimestamp) {
			best = n
		}
	}
	if best == nil {
		return "", nil
	}
	if r.claims == nil {
		r.claims = map[string]string{}
	}
	r.claims[best.Name] = in.nr.Name
	return best.Name, nil
}
