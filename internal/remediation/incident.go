package remediation

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
)

// nodeNameField indexes NodeRemediations by spec.nodeName in the cache.
const nodeNameField = "spec.nodeName"

// incidentName is derived from the node and the condition transition that
// opened the incident, so however often and by however many controllers
// the same transition is seen, at most one NodeRemediation exists for it.
func incidentName(node string, t v1alpha1.Trigger) string {
	h := sha256.Sum256(fmt.Appendf(nil, "%s/%s/%s/%d", node, t.Type, t.Status, t.Since.Unix()))
	name := node
	if len(name) > 243 { // object names are at most 253 characters
		name = name[:243]
	}
	return strings.TrimRight(name, "-.") + "-" + hex.EncodeToString(h[:4])
}

// triggerFrom is the trigger of an incident opened for condition c of node
// n, with the agent's advice for it; a bad advice annotation is returned as
// the error beside a trigger without advice.
func triggerFrom(n *corev1.Node, c *corev1.NodeCondition) (v1alpha1.Trigger, error) {
	action, err := recommendedAction(n, string(c.Type))
	return v1alpha1.Trigger{
		Type:              string(c.Type),
		Status:            metav1.ConditionStatus(c.Status),
		Reason:            c.Reason,
		Message:           truncate(c.Message, 1024),
		Since:             c.LastTransitionTime,
		RecommendedAction: action,
	}, err
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// incidentsOf lists the node's NodeRemediations, oldest first.
func incidentsOf(ctx context.Context, r client.Reader, node string) ([]v1alpha1.NodeRemediation, error) {
	var list v1alpha1.NodeRemediationList
	if err := r.List(ctx, &list, client.MatchingFields{nodeNameField: node}); err != nil {
		return nil, fmt.Errorf("listing remediations of node %s: %w", node, err)
	}
	sort.Slice(list.Items, func(i, j int) bool {
		return list.Items[i].CreationTimestamp.Before(&list.Items[j].CreationTimestamp)
	})
	return list.Items, nil
}

// openIncident returns the node's incident that is not over, if any.
func openIncident(items []v1alpha1.NodeRemediation) *v1alpha1.NodeRemediation {
	for i := range items {
		if !items[i].Status.Phase.Terminal() {
			return &items[i]
		}
	}
	return nil
}
