package podresources

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
)

// GPU is one GPU of the node as the agent's snapshot knows it.
type GPU struct {
	Index int
	UUID  string
}

// Sharing modes of a GPU (the strings of v1alpha1.GPUSharing*, which this
// domain package cannot import).
const (
	SharingExclusive = "Exclusive"
	SharingShared    = "Shared"
	SharingMIG       = "MIG"
	SharingUnknown   = "Unknown"
)

// Holding is who holds one GPU.
type Holding struct {
	// Pods are namespace/name, sorted; only meaningful when Sharing is
	// SharingExclusive.
	Pods    []string
	Sharing string
	// Err says why the holders cannot be known (Sharing Unknown).
	Err string
}

// DRA drivers whose device names Holders understands: NVIDIA's GPU driver
// names whole GPUs "gpu-<index>" and MIG devices "gpu-<index>-mig-…".
const nvidiaDRADriver = "gpu.nvidia.com"

// Holders answers, for each of gpus (by index), which pods hold it, from a
// List answer. A device of an NVIDIA resource that names no GPU of gpus
// (an ID it cannot parse, a MIG UUID without its parent, a DRA device of
// a name it does not know) could be on any GPU: then every GPU is Unknown,
// with the reason.
func Holders(resp *podresourcesv1.ListPodResourcesResponse, gpus []GPU) map[int]Holding {
	byUUID := map[string]int{}
	known := map[int]bool{}
	for _, g := range gpus {
		known[g.Index] = true
		if g.UUID != "" {
			byUUID[strings.ToUpper(g.UUID)] = g.Index
		}
	}
	type acc struct {
		pods          map[string]bool
		shared, isMIG bool
	}
	per := map[int]*acc{}
	var unknown []string
	hold := func(index int, pod string, shared, mig bool) {
		a := per[index]
		if a == nil {
			a = &acc{pods: map[string]bool{}}
			per[index] = a
		}
		a.pods[pod] = true
		a.shared = a.shared || shared
		a.isMIG = a.isMIG || mig
	}
	resolve := func(gpu string) (int, bool) {
		if i, err := strconv.Atoi(gpu); err == nil {
			return i, known[i]
		}
		i, ok := byUUID[strings.ToUpper(gpu)]
		return i, ok
	}
	for _, p := range resp.GetPodResources() {
		pod := p.GetNamespace() + "/" + p.GetName()
		for _, c := range p.GetContainers() {
			for _, dev := range c.GetDevices() {
				res := dev.GetResourceName()
				if !IsNVIDIAResource(res) {
					continue
				}
				shared := strings.HasSuffix(res, sharedSuffix)
				for _, id := range dev.GetDeviceIds() {
					d, err := ParseDeviceID(res, id)
					if err != nil {
						unknown = append(unknown, fmt.Sprintf("pod %s: %v", pod, err))
						continue
					}
					i, ok := resolve(d.GPU)
					if !ok {
						unknown = append(unknown, fmt.Sprintf("pod %s: device %q of %s is no GPU the agent sees", pod, id, res))
						continue
					}
					hold(i, pod, shared || d.Replica >= 0, d.MIG)
				}
			}
			for _, dr := range c.GetDynamicResources() {
				for _, cr := range dr.GetClaimResources() {
					if cr.GetDriverName() != nvidiaDRADriver {
						continue
					}
					i, mig, ok := draDevice(cr.GetDeviceName())
					if !ok || !known[i] {
						unknown = append(unknown, fmt.Sprintf("pod %s: DRA device %q of %s is no GPU the agent can name", pod, cr.GetDeviceName(), cr.GetDriverName()))
						continue
					}
					hold(i, pod, cr.ShareId != nil, mig)
				}
			}
		}
	}
	out := make(map[int]Holding, len(gpus))
	for _, g := range gpus {
		h := Holding{Sharing: SharingExclusive}
		if a := per[g.Index]; a != nil {
			h.Pods = slices.Sorted(mapKeys(a.pods))
			switch {
			case a.isMIG:
				h.Sharing = SharingMIG
			case a.shared || len(a.pods) > 1:
				h.Sharing = SharingShared
			}
		}
		if len(unknown) > 0 {
			h = Holding{Sharing: SharingUnknown, Err: unknownReason(unknown)}
		}
		out[g.Index] = h
	}
	return out
}

// unknownReason names the first devices that could not be placed.
func unknownReason(unknown []string) string {
	const shown = 3
	msg := strings.Join(unknown[:min(shown, len(unknown))], "; ")
	if len(unknown) > shown {
		msg += fmt.Sprintf("; and %d more", len(unknown)-shown)
	}
	return "which GPU a device is cannot be known (" + msg + "): the whole node is drained"
}

// draDevice reads NVIDIA's DRA device names: gpu-<index> and
// gpu-<index>-mig-<…>.
func draDevice(name string) (index int, mig, ok bool) {
	rest, found := strings.CutPrefix(name, "gpu-")
	if !found {
		return 0, false, false
	}
	idx, tail, hasTail := strings.Cut(rest, "-")
	if !isIndex(idx) || (hasTail && !strings.HasPrefix(tail, "mig-")) {
		return 0, false, false
	}
	i, _ := strconv.Atoi(idx)
	return i, hasTail, true
}

func mapKeys(m map[string]bool) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
