package simfleet

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/gpuheal/gpuheal/internal/agent/kubecore"
	"github.com/gpuheal/gpuheal/internal/podresources"
)

// deviceManager is a kwok node's kubelet device manager as its agent sees
// it through the PodResources API: every pod on the node that requests
// nvidia.com/gpu holds whole GPUs, named by the sim GPUs' UUIDs as the
// NVIDIA device plugin names them (DEVICE_ID_STRATEGY=uuid). A pod keeps
// its GPUs while it lives; a new pod gets the first free GPUs in index
// order, pods taken oldest first. It answers in-process with the real
// protocol's messages, so the agent's mapping (podresources.Holders) runs
// as on a real node, without a socket and a gRPC server per node of a
// fleet of hundreds; the socket itself is tested in internal/podresources.
type deviceManager struct {
	node  string
	kube  listPods
	uuids func() []string // the node's GPUs of this boot, by index

	mu sync.Mutex
	// held is each living pod's GPUs, by index, per container in order.
	held map[types.UID][][]int
}

// listPods lists the pods on one node.
type listPods func(ctx context.Context, node string) ([]simPod, error)

var _ podresources.Lister = (*deviceManager)(nil)

func newDeviceManager(node string, list listPods, uuids func() []string) *deviceManager {
	return &deviceManager{node: node, kube: list, uuids: uuids, held: map[types.UID][][]int{}}
}

// List answers like the kubelet: the node's pods and their GPUs.
func (m *deviceManager) List(ctx context.Context) (*podresourcesv1.ListPodResourcesResponse, error) {
	pods, err := m.kube(ctx, m.node)
	if err != nil {
		return nil, fmt.Errorf("sim device manager of %s: %w", m.node, err)
	}
	live := make([]simPod, 0, len(pods))
	for _, p := range pods {
		if !p.finished() && p.Spec.NodeName == m.node {
			live = append(live, p)
		}
	}
	slices.SortFunc(live, func(a, b simPod) int {
		return cmp.Or(a.CreationTimestamp.Compare(b.CreationTimestamp.Time), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	m.mu.Lock()
	defer m.mu.Unlock()
	uuids := m.uuids()
	m.forgetGone(live)
	used := make([]bool, len(uuids))
	for _, cs := range m.held {
		for _, c := range cs {
			for _, i := range c {
				if i < len(used) {
					used[i] = true
				}
			}
		}
	}
	resp := &podresourcesv1.ListPodResourcesResponse{}
	for _, p := range live {
		cs, ok := m.held[p.UID]
		if !ok {
			cs = assign(p, used)
			m.held[p.UID] = cs
		}
		pr := &podresourcesv1.PodResources{Namespace: p.Namespace, Name: p.Name}
		for ci, c := range p.Spec.Containers {
			cr := &podresourcesv1.ContainerResources{Name: c.Name}
			if ci < len(cs) && len(cs[ci]) > 0 {
				var ids []string
				for _, i := range cs[ci] {
					if i < len(uuids) {
						ids = append(ids, uuids[i])
					}
				}
				cr.Devices = []*podresourcesv1.ContainerDevices{{ResourceName: podresources.ResourceGPU, DeviceIds: ids}}
			}
			pr.Containers = append(pr.Containers, cr)
		}
		resp.PodResources = append(resp.PodResources, pr)
	}
	return resp, nil
}

// forgetGone frees the GPUs of pods no longer on the node.
func (m *deviceManager) forgetGone(live []simPod) {
	alive := make(map[types.UID]bool, len(live))
	for _, p := range live {
		alive[p.UID] = true
	}
	for uid := range m.held {
		if !alive[uid] {
			delete(m.held, uid)
		}
	}
}

// assign gives each container of p the first free GPUs it asks for and
// marks them used. A container asking for more than is free gets what is
// free (the scheduler would not have placed it; kwok does not check).
func assign(p simPod, used []bool) [][]int {
	out := make([][]int, len(p.Spec.Containers))
	for ci, c := range p.Spec.Containers {
		want := gpuCount(c)
		for i := 0; i < len(used) && want > 0; i++ {
			if !used[i] {
				used[i] = true
				out[ci] = append(out[ci], i)
				want--
			}
		}
	}
	return out
}

// gpuCount is how many GPUs a container asks for: its limit, which an
// extended resource must have, else its request.
func gpuCount(c podContainer) int {
	if q, ok := c.Resources.Limits[gpuResource]; ok {
		return int(q.Value())
	}
	if q, ok := c.Resources.Requests[gpuResource]; ok {
		return int(q.Value())
	}
	return 0
}

// podsOnNode lists the pods bound to a node.
func (f *simFleet) podsOnNode(ctx context.Context, node string) ([]simPod, error) {
	var pods simPodList
	if err := kubecore.Get(ctx, f.kube.Get().Resource("pods").Param("fieldSelector", "spec.nodeName="+node), &pods); err != nil {
		return nil, fmt.Errorf("listing the pods of node %s: %w", node, err)
	}
	return pods.Items, nil
}

// devicesOf is the node's device manager; it outlives the node's agents,
// so a pod keeps its GPUs across an agent restart, and follows the sim
// GPUs of the current boot.
func (f *simFleet) devicesOf(name string, uuids func() []string) *deviceManager {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.devices == nil {
		f.devices = map[string]*deviceManager{}
	}
	m := f.devices[name]
	if m == nil {
		m = newDeviceManager(name, f.podsOnNode, uuids)
		f.devices[name] = m
	}
	m.mu.Lock()
	m.uuids = uuids
	m.mu.Unlock()
	return m
}
