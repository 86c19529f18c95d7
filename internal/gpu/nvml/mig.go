//go:build cgo

package nvml

import (
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuheal/gpuheal/internal/gpu"
)

// readMIGDevices lists the MIG devices of a GPU in MIG mode, in the order
// nvidia-smi prints them: the populated slots, numbered from 0. Per-device
// ECC counts are left unknown: NVML reports ECC for the whole GPU.
func readMIGDevices(s *session, h nvml.Device) []gpu.MIGDevice {
	slots, ok := get(s, "GetMaxMigDeviceCount", h.GetMaxMigDeviceCount)
	if !ok {
		return nil
	}
	var out []gpu.MIGDevice
	for slot := range slots {
		// An empty slot answers NOT_FOUND: not an error.
		m, ok := get(s, fmt.Sprintf("GetMigDeviceHandleByIndex(%d)", slot), func() (nvml.Device, nvml.Return) {
			return h.GetMigDeviceHandleByIndex(slot)
		}, nvml.ERROR_NOT_FOUND)
		if !ok {
			continue
		}
		d := gpu.MIGDevice{Index: len(out)}
		if id, ok := get(s, "GetGpuInstanceId", m.GetGpuInstanceId); ok {
			d.GPUInstanceID = id
		}
		if id, ok := get(s, "GetComputeInstanceId", m.GetComputeInstanceId); ok {
			d.ComputeInstanceID = id
		}
		if mem, ok := get(s, "GetMemoryInfo(MIG)", m.GetMemoryInfo); ok {
			d.MemoryUsedBytes, d.MemoryTotalBytes = gpu.U64(mem.Used), gpu.U64(mem.Total)
		}
		out = append(out, d)
	}
	return out
}

// fabricStates are nvidia-smi's words for NVML's GPU fabric states, so
// that both backends feed the same rule (fabric-not-ready).
var fabricStates = map[uint8]string{
	nvml.GPU_FABRIC_STATE_NOT_STARTED: "Not Started",
	nvml.GPU_FABRIC_STATE_IN_PROGRESS: "In Progress",
	nvml.GPU_FABRIC_STATE_COMPLETED:   "Completed",
}

// readFabric reads the GPU's registration with the NVLink fabric on
// NVSwitch systems (HGX H100/H200): GPUs elsewhere answer NOT_SUPPORTED
// or state NOT_SUPPORTED, and keep both fields empty, as nvidia-smi's N/A.
// The status is only meaningful once registration completed.
func readFabric(s *session, h nvml.Device, g *gpu.GPUSnapshot) {
	f, ok := get(s, "GetGpuFabricInfo", h.GetGpuFabricInfo)
	if !ok {
		return
	}
	state, known := fabricStates[f.State]
	switch {
	case f.State == nvml.GPU_FABRIC_STATE_NOT_SUPPORTED:
		return
	case !known:
		state = fmt.Sprintf("Unknown (%d)", f.State)
	}
	g.FabricState = state
	if f.State != nvml.GPU_FABRIC_STATE_COMPLETED {
		return
	}
	if ret := nvml.Return(f.Status); ret == nvml.SUCCESS {
		g.FabricStatus = "Success" // nvmlErrorString's word, which nvidia-smi prints
	} else {
		g.FabricStatus = ret.Error()
	}
}
