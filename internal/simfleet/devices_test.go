package simfleet

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuheal/gpuheal/internal/gpu/sim"
	"github.com/gpuheal/gpuheal/internal/podresources"
)

func gpuPod(name, node string, created int, gpus ...int) simPod {
	p := simPod{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: name, UID: types.UID(name),
		CreationTimestamp: metav1.NewTime(time.Date(2026, 12, 1, 0, created, 0, 0, time.UTC))}}
	p.Spec.NodeName = node
	for i, n := range gpus {
		c := podContainer{Name: fmt.Sprintf("c%d", i)}
		if n > 0 {
			c.Resources.Limits = map[string]resource.Quantity{gpuResource: resource.MustParse(fmt.Sprint(n))}
		}
		p.Spec.Containers = append(p.Spec.Containers, c)
	}
	p.Status.Phase = "Running"
	return p
}

// holders is the device manager's answer as the agent maps it.
func holders(t *testing.T, m *deviceManager, node *sim.Node) map[int][]string {
	t.Helper()
	resp, err := m.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var gpus []podresources.GPU
	for i, u := range node.UUIDs() {
		gpus = append(gpus, podresources.GPU{Index: i, UUID: u})
	}
	out := map[int][]string{}
	for i, h := range podresources.Holders(resp, gpus) {
		if h.Sharing != podresources.SharingExclusive {
			t.Errorf("GPU %d: %+v, want Exclusive", i, h)
		}
		if len(h.Pods) > 0 {
			out[i] = h.Pods
		}
	}
	return out
}

// The sim device manager hands whole GPUs, named by the sim node's UUIDs,
// to the pods on its node: first free GPUs in index order, oldest pod
// first, per container; a pod keeps its GPUs while it lives, and a
// finished or deleted pod's GPUs go to the next pod.
func TestSimDeviceManager(t *testing.T) {
	t.Parallel()
	node, err := sim.New(sim.Options{NodeName: "gpu-0001", GPUs: 8})
	if err != nil {
		t.Fatal(err)
	}
	pods := []simPod{
		gpuPod("b", "gpu-0001", 2, 1, 1), // two containers, one GPU each
		gpuPod("a", "gpu-0001", 1, 1),
		gpuPod("cpu", "gpu-0001", 0, 0),
		gpuPod("elsewhere", "gpu-0002", 0, 4),
	}
	m := newDeviceManager("gpu-0001", func(context.Context, string) ([]simPod, error) { return pods, nil }, node.UUIDs)
	want := map[int][]string{0: {"ml/a"}, 1: {"ml/b"}, 2: {"ml/b"}}
	if d := cmp.Diff(want, holders(t, m, node)); d != "" {
		t.Fatalf("first answer (-want +got):\n%s", d)
	}

	pods[1].Status.Phase = "Succeeded" // a finished
	pods = append(pods, gpuPod("c", "gpu-0001", 3, 2))
	want = map[int][]string{0: {"ml/c"}, 1: {"ml/b"}, 2: {"ml/b"}, 3: {"ml/c"}}
	if d := cmp.Diff(want, holders(t, m, node)); d != "" {
		t.Errorf("after a finished and c came (-want +got):\n%s", d)
	}
	pods = pods[2:] // b deleted
	pods = append(pods, gpuPod("d", "gpu-0001", 4, 3))
	want = map[int][]string{0: {"ml/c"}, 1: {"ml/d"}, 2: {"ml/d"}, 3: {"ml/c"}, 4: {"ml/d"}}
	if d := cmp.Diff(want, holders(t, m, node)); d != "" {
		t.Errorf("after b left and d came (-want +got):\n%s", d)
	}
}
