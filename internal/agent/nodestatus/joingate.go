package nodestatus

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/agent/kubecore"
)

// joinConflictTries bounds the read-and-write rounds of TaintNeverValidated
// when others (the kubelet, the scheduler's controllers) write the Node's
// spec at the same moment.
const joinConflictTries = 5

// TaintNeverValidated is the health gate's join taint, agent side: a Node
// that has never passed its checks (no v1alpha1.AnnotationValidatedAt) and
// on which no agent has reported its checks yet (no
// v1alpha1.AnnotationAgentChecks: a node that joins, not one that reboots
// or whose agent restarts) gets v1alpha1.TaintValidating:NoSchedule, so
// that a new node takes no work before the controller ran the checks; it
// says whether it added the taint. It never removes it: the controller does, on a pass. The taints
// are a list the merge patch replaces whole, so the write carries the
// resourceVersion it read and is retried on a conflict: a taint someone
// added in between is never dropped.
func TaintNeverValidated(ctx context.Context, c rest.Interface, node string) (bool, error) {
	for range joinConflictTries {
		n, err := kubecore.GetNode(ctx, c, node)
		if err != nil {
			return false, err
		}
		if _, ok := n.Annotations[v1alpha1.AnnotationValidatedAt]; ok {
			return false, nil
		}
		if _, ok := n.Annotations[v1alpha1.AnnotationAgentChecks]; ok {
			return false, nil // joined before: the gate is the controller's now
		}
		if slices.ContainsFunc(n.Spec.Taints, func(t kubecore.Taint) bool { return t.Key == v1alpha1.TaintValidating }) {
			return false, nil
		}
		taints := append(slices.Clone(n.Spec.Taints), kubecore.Taint{Key: v1alpha1.TaintValidating, Effect: "NoSchedule"})
		body, err := json.Marshal(map[string]any{
			"metadata": map[string]any{"resourceVersion": n.ResourceVersion},
			"spec":     map[string]any{"taints": taints},
		})
		if err != nil {
			return false, fmt.Errorf("encoding the taints of node %s: %w", node, err)
		}
		err = c.Patch(types.MergePatchType).Resource("nodes").Name(node).Body(body).Do(ctx).Error()
		switch {
		case err == nil:
			return true, nil
		case apierrors.IsConflict(err):
			continue
		default:
			return false, fmt.Errorf("tainting node %s %s: %w", node, v1alpha1.TaintValidating, err)
		}
	}
	return false, fmt.Errorf("tainting node %s %s: the node changed under %d tries", node, v1alpha1.TaintValidating, joinConflictTries)
}
