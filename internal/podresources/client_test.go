package podresources_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/gpuheal/gpuheal/internal/podresources"
	"github.com/gpuheal/gpuheal/internal/podresources/podresourcestest"
)

// Sim-style UUIDs of an 8-GPU node.
var uuids = []string{
	"GPU-00000000-0000-0000-0000-000000000000",
	"GPU-11111111-1111-1111-1111-111111111111",
	"GPU-22222222-2222-2222-2222-222222222222",
	"GPU-33333333-3333-3333-3333-333333333333",
	"GPU-44444444-4444-4444-4444-444444444444",
	"GPU-55555555-5555-5555-5555-555555555555",
	"GPU-66666666-6666-6666-6666-666666666666",
	"GPU-77777777-7777-7777-7777-777777777777",
}

func nodeGPUs() []podresources.GPU {
	out := make([]podresources.GPU, len(uuids))
	for i, u := range uuids {
		out[i] = podresources.GPU{Index: i, UUID: u}
	}
	return out
}

// TestHoldersOverTheSocket maps a node's pods to its GPUs through a real
// gRPC server on a unix socket: whole GPUs by UUID, a pod with two GPUs,
// two pods on one GPU's time-slicing replicas, MIG instances of another,
// and other resources beside them.
func TestHoldersOverTheSocket(t *testing.T) {
	t.Parallel()
	srv := podresourcestest.Start(t)
	srv.SetPods(
		podresourcestest.Pod("ml", "train-0", "nvidia.com/gpu", uuids[0]),
		podresourcestest.Pod("ml", "train-1", "nvidia.com/gpu", uuids[1], uuids[2]),
		podresourcestest.Pod("web", "infer-a", "nvidia.com/gpu", uuids[3]+"::0"),
		podresourcestest.Pod("web", "infer-b", "nvidia.com/gpu", uuids[3]+"::3"),
		podresourcestest.Pod("ml", "mig-small", "nvidia.com/mig-1g.10gb", "MIG-GPU-44444444-4444-4444-4444-444444444444/1/0"),
		podresourcestest.Pod("net", "rdma", "rdma/hca", "mlx5_0"),
		&podresourcesv1.PodResources{Namespace: "kube-system", Name: "no-devices"},
	)
	c := podresources.NewClient(srv.Socket, time.Second)
	t.Cleanup(func() { _ = c.Close() })
	resp, err := c.List(context.Background())
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	got := podresources.Holders(resp, nodeGPUs())
	ex := podresources.SharingExclusive
	want := map[int]podresources.Holding{
		0: {Pods: []string{"ml/train-0"}, Sharing: ex},
		1: {Pods: []string{"ml/train-1"}, Sharing: ex},
		2: {Pods: []string{"ml/train-1"}, Sharing: ex},
		3: {Pods: []string{"web/infer-a", "web/infer-b"}, Sharing: podresources.SharingShared},
		4: {Pods: []string{"ml/mig-small"}, Sharing: podresources.SharingMIG},
		5: {Sharing: ex},
		6: {Sharing: ex},
		7: {Sharing: ex},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Holders (-want +got):\n%s", d)
	}
}

// TestHoldersIndexStrategy reads the device plugin's index strategy:
// "3", a MIG device "5:0", and a replica of an index.
func TestHoldersIndexStrategy(t *testing.T) {
	t.Parallel()
	resp := &podresourcesv1.ListPodResourcesResponse{PodResources: []*podresourcesv1.PodResources{
		podresourcestest.Pod("a", "whole", "nvidia.com/gpu", "3"),
		podresourcestest.Pod("a", "mig", "nvidia.com/gpu", "5:0"),
		podresourcestest.Pod("a", "sliced", "nvidia.com/gpu.shared", "6::1"),
	}}
	got := podresources.Holders(resp, nodeGPUs())
	for i, want := range map[int]podresources.Holding{
		3: {Pods: []string{"a/whole"}, Sharing: podresources.SharingExclusive},
		5: {Pods: []string{"a/mig"}, Sharing: podresources.SharingMIG},
		6: {Pods: []string{"a/sliced"}, Sharing: podresources.SharingShared},
	} {
		if d := cmp.Diff(want, got[i]); d != "" {
			t.Errorf("GPU %d (-want +got):\n%s", i, d)
		}
	}
}

// TestHoldersUnknown: a device that could be on any GPU makes every GPU
// Unknown, with the device named.
func TestHoldersUnknown(t *testing.T) {
	t.Parallel()
	for name, pod := range map[string]*podresourcesv1.PodResources{
		"MIG UUID without parent": podresourcestest.Pod("a", "p", "nvidia.com/gpu", "MIG-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"),
		"GPU the agent lacks":     podresourcestest.Pod("a", "p", "nvidia.com/gpu", "GPU-99999999-9999-9999-9999-999999999999"),
		"unparsable ID":           podresourcestest.Pod("a", "p", "nvidia.com/gpu", "gpu0"),
		"DRA device of no name known": {Namespace: "a", Name: "p", Containers: []*podresourcesv1.ContainerResources{{
			DynamicResources: []*podresourcesv1.DynamicResource{{ClaimName: "c", ClaimResources: []*podresourcesv1.ClaimResource{
				{DriverName: "gpu.nvidia.com", PoolName: "node-1", DeviceName: "vgpu-a"}}}}}}},
	} {
		got := podresources.Holders(&podresourcesv1.ListPodResourcesResponse{PodResources: []*podresourcesv1.PodResources{pod}}, nodeGPUs())
		h := got[2]
		if h.Sharing != podresources.SharingUnknown || !strings.Contains(h.Err, "pod a/p") || !strings.Contains(h.Err, "whole node") {
			t.Errorf("%s: GPU 2 = %+v, want Unknown naming pod a/p and the whole-node drain", name, h)
		}
	}
}

// TestHoldersDRA maps NVIDIA DRA driver devices by name: a whole GPU, a
// shared one (share_id set) and a MIG device.
func TestHoldersDRA(t *testing.T) {
	t.Parallel()
	share := "s1"
	claim := func(pod, dev string, shareID *string) *podresourcesv1.PodResources {
		return &podresourcesv1.PodResources{Namespace: "d", Name: pod, Containers: []*podresourcesv1.ContainerResources{{
			DynamicResources: []*podresourcesv1.DynamicResource{{ClaimName: pod, ClaimResources: []*podresourcesv1.ClaimResource{
				{DriverName: "gpu.nvidia.com", PoolName: "node-1", DeviceName: dev, ShareId: shareID}}}}}}}
	}
	resp := &podresourcesv1.ListPodResourcesResponse{PodResources: []*podresourcesv1.PodResources{
		claim("whole", "gpu-1", nil), claim("shared", "gpu-2", &share), claim("mig", "gpu-4-mig-1g10gb-0", nil),
	}}
	got := podresources.Holders(resp, nodeGPUs())
	if got[1].Sharing != podresources.SharingExclusive || got[2].Sharing != podresources.SharingShared || got[4].Sharing != podresources.SharingMIG {
		t.Errorf("DRA sharing = %v / %v / %v, want Exclusive / Shared / MIG", got[1], got[2], got[4])
	}
	if d := cmp.Diff([]string{"d/whole"}, got[1].Pods); d != "" {
		t.Errorf("GPU 1 pods (-want +got):\n%s", d)
	}
}

func TestNoSocket(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "kubelet.sock")
	_, err := podresources.NewClient(path, time.Second).List(context.Background())
	if !errors.Is(err, podresources.ErrNoSocket) || !strings.Contains(err.Error(), path) {
		t.Errorf("List without a socket = %v, want ErrNoSocket naming %s", err, path)
	}
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := podresources.NewClient(path, time.Second).List(context.Background()); !errors.Is(err, podresources.ErrNoSocket) || !strings.Contains(err.Error(), "not a socket") {
		t.Errorf("List of a plain file = %v, want ErrNoSocket saying it is not a socket", err)
	}
	if _, err := podresources.NewClient("", time.Second).List(context.Background()); !errors.Is(err, podresources.ErrNoSocket) || !strings.Contains(err.Error(), "turned off") {
		t.Errorf("List with the socket off = %v, want ErrNoSocket saying it is turned off", err)
	}
}

// TestHangingKubelet: a kubelet that never answers costs the timeout, and
// the error says so.
func TestHangingKubelet(t *testing.T) {
	t.Parallel()
	srv := podresourcestest.Start(t)
	srv.Hang()
	c := podresources.NewClient(srv.Socket, 50*time.Millisecond)
	t.Cleanup(func() { _ = c.Close() })
	_, err := c.List(context.Background())
	if err == nil || !strings.Contains(err.Error(), "no answer within 50ms") {
		t.Errorf("List of a hanging kubelet = %v, want a timeout error", err)
	}
}

// TestGet uses Get where the kubelet serves it and falls back to List
// where its feature gate is off.
func TestGet(t *testing.T) {
	t.Parallel()
	for _, noGet := range []bool{false, true} {
		srv := podresourcestest.Start(t)
		srv.SetPods(podresourcestest.Pod("ml", "train-0", "nvidia.com/gpu", uuids[0]))
		if noGet {
			srv.WithoutGet()
		}
		c := podresources.NewClient(srv.Socket, time.Second)
		p, err := c.Get(context.Background(), "ml", "train-0")
		if err != nil || p.GetName() != "train-0" {
			t.Errorf("Get (gate off: %v) = %v, %v; want pod train-0", noGet, p, err)
		}
		if want := map[bool]int{false: 0, true: 1}[noGet]; srv.Lists() != want {
			t.Errorf("Get (gate off: %v) made %d List calls, want %d", noGet, srv.Lists(), want)
		}
		_, err = c.Get(context.Background(), "ml", "gone")
		if noGet && !errors.Is(err, os.ErrNotExist) {
			t.Errorf("Get of a missing pod through List = %v, want os.ErrNotExist", err)
		}
		if !noGet && (err == nil || !strings.Contains(err.Error(), "not found")) {
			t.Errorf("Get of a missing pod = %v, want the kubelet's not-found error", err)
		}
		_ = c.Close()
	}
}

// FuzzHolders: any device ID or DRA device name from the socket either
// lands on a GPU the node has or makes every GPU Unknown; it never lands
// on a GPU the node lacks, and never panics.
func FuzzHolders(f *testing.F) {
	f.Add("nvidia.com/gpu", uuids[3]+"::1", "gpu-2")
	f.Add("nvidia.com/mig-1g.10gb", "3:0", "gpu-4-mig-1g10gb-0")
	f.Add("nvidia.com/gpu", "9", "gpu-9")
	f.Fuzz(func(t *testing.T, res, id, dra string) {
		resp := &podresourcesv1.ListPodResourcesResponse{PodResources: []*podresourcesv1.PodResources{
			podresourcestest.Pod("a", "dp", res, id),
			{Namespace: "a", Name: "dra", Containers: []*podresourcesv1.ContainerResources{{
				DynamicResources: []*podresourcesv1.DynamicResource{{ClaimResources: []*podresourcesv1.ClaimResource{
					{DriverName: "gpu.nvidia.com", DeviceName: dra}}}}}}},
		}}
		got := podresources.Holders(resp, nodeGPUs()[:4])
		if len(got) != 4 {
			t.Fatalf("Holders answered for %d GPUs, want 4", len(got))
		}
		for i, h := range got {
			if i < 0 || i > 3 {
				t.Fatalf("Holders answered for GPU %d the node lacks", i)
			}
			if h.Sharing == podresources.SharingUnknown && h.Err == "" {
				t.Fatalf("GPU %d Unknown without a reason", i)
			}
		}
	})
}
