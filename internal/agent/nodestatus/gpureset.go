package nodestatus

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
)

// PatchGPUReset writes the agent's answer to a GPU reset request
// (v1alpha1.AnnotationGPUReset) on its Node, alone in its own merge patch:
// the controller waits for it, so it goes out the moment it is known, not
// with the next health change.
func PatchGPUReset(ctx context.Context, c rest.Interface, node string, r *v1alpha1.GPUResetReport) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encoding the GPU reset report of node %s: %w", node, err)
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"annotations": map[string]string{v1alpha1.AnnotationGPUReset: string(b)},
	}})
	if err != nil {
		return fmt.Errorf("encoding the GPU reset report of node %s: %w", node, err)
	}
	if err := c.Patch(types.MergePatchType).Resource("nodes").Name(node).Body(patch).Do(ctx).Error(); err != nil {
		return fmt.Errorf("writing the GPU reset report of node %s: %w", node, err)
	}
	return nil
}
