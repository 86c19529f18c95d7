//go:build integration

package simfleet

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/testenv"
	"github.com/gpuheal/gpuheal/internal/testproc"
)

// bindGPUPods creates n pods of one GPU each on node, bound by name (no
// scheduler), created in name order: the sim device manager gives pod i
// GPU i.
func bindGPUPods(ctx context.Context, t *testing.T, c client.Client, node string, n int) {
	t.Helper()
	for i := range n {
		p := &corev1.Pod{}
		p.Namespace, p.Name = "default", fmt.Sprintf("%s-w%d", node, i)
		p.Spec.NodeName = node
		p.Spec.Containers = []corev1.Container{{Name: "train", Image: "train",
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{testenv.GPUResource: resource.MustParse("1")}}}}
		if err := c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
}

// waitGPUFaults waits for node's gpu-faults annotation and checks it lists
// GPU gpu alone, held by exactly pod, whole.
func waitGPUFaults(_ context.Context, t *testing.T, c client.Client, node string, gpu int32, pod string) {
	t.Helper()
	var rep v1alpha1.GPUFaultReport
	testproc.Eventually(t, time.Minute, "gpu-faults on "+node, func(ctx context.Context) (bool, error) {
		var n corev1.Node
		if err := c.Get(ctx, client.ObjectKey{Name: node}, &n); err != nil {
			return false, err
		}
		v, ok := n.Annotations[v1alpha1.AnnotationGPUFaults]
		if !ok {
			return false, nil
		}
		return true, json.Unmarshal([]byte(v), &rep)
	})
	var got []string
	for _, g := range rep.GPUs {
		got = append(got, fmt.Sprintf("gpu %d %s %v", g.Index, g.Sharing, g.Pods))
	}
	if d := cmp.Diff([]string{fmt.Sprintf("gpu %d Exclusive [%s]", gpu, pod)}, got); d != "" {
		t.Errorf("gpu-faults of %s (-want +got):\n%s", node, d)
	}
}
