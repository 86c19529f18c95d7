//go:build cgo

package nvml

import (
	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuheal/gpuheal/internal/gpu"
)

// readHealth reads everything that changes. The order puts what the
// analyzer needs most first, since a call that hangs ends the read.
func readHealth(s *session, h nvml.Device, syms symbols, g *gpu.GPUSnapshot) {
	readMemoryHealth(s, h, g)
	readFields(s, h, g)
	readTelemetry(s, h, syms, g)
	readPCIe(s, h, g)
	readModes(s, h, g)
	g.NVLink = readNVLinks(s, h)
	if syms.fabricInfo {
		readFabric(s, h, g)
	}
}

func readTelemetry(s *session, h nvml.Device, syms symbols, g *gpu.GPUSnapshot) {
	if u, ok := get(s, "GetUtilizationRates", h.GetUtilizationRates); ok {
		g.UtilizationGPUPercent = gpu.F64(float64(u.Gpu))
		g.UtilizationMemoryPercent = gpu.F64(float64(u.Memory))
	}
	if m, ok := get(s, "GetMemoryInfo", h.GetMemoryInfo); ok {
		g.MemoryUsedBytes, g.MemoryTotalBytes = gpu.U64(m.Used), gpu.U64(m.Total)
	}
	if t, ok := get(s, "GetTemperature", func() (uint32, nvml.Return) {
		return h.GetTemperature(nvml.TEMPERATURE_GPU)
	}); ok {
		g.TemperatureCelsius = gpu.F64(float64(t))
	}
	if mw, ok := get(s, "GetPowerUsage", h.GetPowerUsage); ok {
		g.PowerDrawWatts = gpu.F64(float64(mw) / 1000)
	}
	if mw, ok := get(s, "GetEnforcedPowerLimit", h.GetEnforcedPowerLimit); ok {
		g.PowerLimitWatts = gpu.F64(float64(mw) / 1000)
	}
	g.SMClockMHz = clockMHz(s, h, "GetClockInfo(SM)", nvml.CLOCK_SM)
	g.MemoryClockMHz = clockMHz(s, h, "GetClockInfo(MEM)", nvml.CLOCK_MEM)
	g.ClockEventReasons = clockEventReasons(s, h, syms)
}

// clockEventReasons falls back to the pre-R535 name of the same bitmask
// when the library lacks the new symbol, or (a library that checks for
// itself) answers FUNCTION_NOT_FOUND.
func clockEventReasons(s *session, h nvml.Device, syms symbols) *uint64 {
	if syms.clocksEventReasons {
		const q = "GetCurrentClocksEventReasons"
		r, ret, answered := call(s, q, h.GetCurrentClocksEventReasons)
		if !answered {
			return nil
		}
		if ret != nvml.ERROR_FUNCTION_NOT_FOUND {
			if !s.check(q, ret, nil) {
				return nil
			}
			return gpu.U64(r)
		}
	}
	r, ok := get(s, "GetCurrentClocksThrottleReasons", h.GetCurrentClocksThrottleReasons)
	if !ok {
		return nil
	}
	return gpu.U64(r)
}

func clockMHz(s *session, h nvml.Device, query string, t nvml.ClockType) *float64 {
	v, ok := get(s, query, func() (uint32, nvml.Return) { return h.GetClockInfo(t) })
	if !ok {
		return nil
	}
	return gpu.F64(float64(v))
}

func readModes(s *session, h nvml.Device, g *gpu.GPUSnapshot) {
	if m, ok := get(s, "GetPersistenceMode", h.GetPersistenceMode); ok {
		g.PersistenceMode = gpu.Bool(m == nvml.FEATURE_ENABLED)
	}
	if m, ok := get(s, "GetMigMode", func() (int, nvml.Return) {
		current, _, ret := h.GetMigMode()
		return current, ret
	}); ok {
		g.MIGEnabled = gpu.Bool(m == nvml.DEVICE_MIG_ENABLE)
		if m == nvml.DEVICE_MIG_ENABLE {
			g.MIGDevices = readMIGDevices(s, h)
		}
	}
}

func readPCIe(s *session, h nvml.Device, g *gpu.GPUSnapshot) {
	g.PCIe = gpu.PCIe{
		ReplayCounter:    nonNegative(get(s, "GetPcieReplayCounter", h.GetPcieReplayCounter)),
		LinkGenCurrent:   nonNegative(get(s, "GetCurrPcieLinkGeneration", h.GetCurrPcieLinkGeneration)),
		LinkGenMax:       nonNegative(get(s, "GetMaxPcieLinkGeneration", h.GetMaxPcieLinkGeneration)),
		LinkWidthCurrent: nonNegative(get(s, "GetCurrPcieLinkWidth", h.GetCurrPcieLinkWidth)),
		LinkWidthMax:     nonNegative(get(s, "GetMaxPcieLinkWidth", h.GetMaxPcieLinkWidth)),
	}
}

func nonNegative(v int, ok bool) *uint64 {
	if !ok || v < 0 {
		return nil
	}
	return gpu.U64(uint64(v))
}
