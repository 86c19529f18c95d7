package testenv

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/poll"
)

// GPUResource is the extended resource NVIDIA's device plugin advertises.
const GPUResource = corev1.ResourceName(v1alpha1.ResourceNvidiaGPU)

var zones = []string{"us-east-1a", "us-east-1b", "us-east-1c"}

// GPUNode returns a p5.48xlarge-shaped node (8× H100) that kwok will manage.
// Names, zones and instance ids derive from the name, so fleets are stable
// across runs.
func GPUNode(name string) *corev1.Node {
	sum := sha256.Sum256([]byte(name))
	zone := zones[int(sum[0])%len(zones)]
	instanceID := "i-0" + hex.EncodeToString(sum[:8])[:16]
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("192"),
		corev1.ResourceMemory: resource.MustParse("2048Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
		GPUResource:           resource.MustParse("8"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{v1alpha1.AnnotationKwokManaged: v1alpha1.KwokManagedValue},
			Labels: map[string]string{
				"kubernetes.io/hostname":           name,
				"kubernetes.io/os":                 "linux",
				"kubernetes.io/arch":               "amd64",
				"type":                             "kwok",
				v1alpha1.LabelNvidiaGPUPresent:     "true",
				v1alpha1.LabelNvidiaGPUCount:       "8",
				v1alpha1.LabelNvidiaGPUProduct:     "NVIDIA-H100-80GB-HBM3",
				"node.kubernetes.io/instance-type": "p5.48xlarge",
				"topology.kubernetes.io/region":    "us-east-1",
				"topology.kubernetes.io/zone":      zone,
			},
		},
		Spec: corev1.NodeSpec{ProviderID: fmt.Sprintf("aws:///%s/%s", zone, instanceID)},
		Status: corev1.NodeStatus{
			Capacity:    capacity,
			Allocatable: capacity.DeepCopy(),
		},
	}
}

// NodeName is the name of the i-th node of a fleet with the given prefix.
func NodeName(prefix string, i int) string { return fmt.Sprintf("%s-%04d", prefix, i) }

// CreateGPUNodes creates n fake GPU nodes named prefix-0000… and returns
// their names. Creation runs a few requests at a time: one at a time takes
// seconds for a fleet, all at once trips the API server's rate limits.
func CreateGPUNodes(ctx context.Context, c client.Client, prefix string, n int) ([]string, error) {
	names := make([]string, n)
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for i := range n {
		names[i] = NodeName(prefix, i)
		g.Go(func() error {
			if err := c.Create(ctx, GPUNode(names[i])); err != nil {
				return fmt.Errorf("creating node %s: %w", names[i], err)
			}
			return nil
		})
	}
	return names, g.Wait()
}

// WaitNodesReady polls until every named node reports Ready=True, or the
// context ends; the error then says how many were still not ready.
func WaitNodesReady(ctx context.Context, c client.Client, names []string) error {
	want := make(map[string]bool, len(names))
	for _, n := range names {
		want[n] = true
	}
	what := fmt.Sprintf("%d nodes to be Ready", len(want))
	return poll.Until(ctx, what, 200*time.Millisecond, func(ctx context.Context) (bool, error) {
		var list corev1.NodeList
		if err := c.List(ctx, &list); err != nil {
			return false, fmt.Errorf("listing nodes: %w", err)
		}
		ready := 0
		for i := range list.Items {
			if want[list.Items[i].Name] && NodeReady(&list.Items[i]) {
				ready++
			}
		}
		if ready < len(want) {
			return false, fmt.Errorf("%d of %d nodes not Ready", len(want)-ready, len(want))
		}
		return true, nil
	})
}
