package kwok

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// setConditions writes only the given conditions to node's status. A
// strategic merge patch merges the list by type, so kwok's conditions and
// the agent's others stay as they are. node is updated from the reply.
func setConditions(ctx context.Context, c client.Client, now time.Time, node *corev1.Node, conds ...corev1.NodeCondition) error {
	ts := metav1.NewTime(now)
	for i := range conds {
		conds[i].LastHeartbeatTime = ts
		conds[i].LastTransitionTime = ts
		// A condition that keeps its status keeps its transition time,
		// as the kubelet and the agent do.
		if old := condition(node, conds[i].Type); old != nil && old.Status == conds[i].Status {
			conds[i].LastTransitionTime = old.LastTransitionTime
		}
	}
	data, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": conds}})
	if err != nil {
		return err
	}
	if err := c.Status().Patch(ctx, node, client.RawPatch(types.StrategicMergePatchType, data)); err != nil {
		return fmt.Errorf("patching conditions of node %s: %w", node.Name, err)
	}
	return nil
}

// patchMeta applies a JSON merge patch to node's labels and annotations;
// a nil value removes the key. A non-empty resourceVersion makes the patch
// fail with a conflict when the node changed since it was read.
func patchMeta(ctx context.Context, c client.Client, node *corev1.Node, labels, annotations map[string]*string, resourceVersion string) error {
	meta := map[string]any{}
	if len(labels) > 0 {
		meta["labels"] = labels
	}
	if len(annotations) > 0 {
		meta["annotations"] = annotations
	}
	if resourceVersion != "" {
		meta["resourceVersion"] = resourceVersion
	}
	data, err := json.Marshal(map[string]any{"metadata": meta})
	if err != nil {
		return err
	}
	if err := c.Patch(ctx, node, client.RawPatch(types.MergePatchType, data)); err != nil {
		return fmt.Errorf("patching labels and annotations of node %s: %w", node.Name, err)
	}
	return nil
}

func condition(node *corev1.Node, t corev1.NodeConditionType) *corev1.NodeCondition {
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == t {
			return &node.Status.Conditions[i]
		}
	}
	return nil
}

func ptr(s string) *string { return &s }
