package smi

import (
	"fmt"
	"math"
	"strings"

	"github.com/gpuheal/gpuheal/internal/gpu"
)

// convertGPU turns the i-th <gpu> block into a snapshot. The index is the
// block's position: nvidia-smi lists GPUs in NVML index order.
func convertGPU(i int, x *smiGPU) gpu.GPUSnapshot {
	g := gpu.GPUSnapshot{Index: i}

	// The id attribute repeats pci_bus_id and survives in outputs where
	// the pci block could not be read.
	bus := choose(field{"pci/pci_bus_id", x.PCI.BusID}, field{"gpu/@id", x.ID})
	r := recorder{where: fmt.Sprintf("gpu %d", i), errs: &g.Errors}
	if s, ok := r.value(bus.query, bus.raw); ok {
		id, err := gpu.NormalizePCIBusID(s)
		if err != nil {
			// Keep what nvidia-smi printed rather than nothing; the
			// error says it is not in the normalized form.
			id = s
		}
		g.PCIBusID = id
		r.where += " (" + id + ")"
		if err != nil {
			r.add(bus.query, false, "%v", err)
		}
	}

	g.UUID = r.text("uuid", x.UUID)
	g.Name = r.text("product_name", x.ProductName)
	g.Serial = r.text("serial", x.Serial)
	g.VBIOS = r.text("vbios_version", x.VBIOSVersion)
	g.MinorNum = r.u64("minor_number", x.MinorNumber, "")

	g.UtilizationGPUPercent = r.f64("utilization/gpu_util", x.GPUUtil, "%")
	g.UtilizationMemoryPercent = r.f64("utilization/memory_util", x.MemoryUtil, "%")
	g.MemoryUsedBytes = r.bytes("fb_memory_usage/used", x.FBMemory.Used)
	g.MemoryTotalBytes = r.bytes("fb_memory_usage/total", x.FBMemory.Total)

	g.TemperatureCelsius = r.f64("temperature/gpu_temp", x.GPUTemp, "C")
	g.MemoryTemperatureCelsius = r.f64("temperature/memory_temp", x.MemoryTemp, "C")

	// power_draw is what NVML's GetPowerUsage returns (a one-second average
	// on Ampere and later); DTD v13 drops it for average_ and instant_,
	// and the average is the same reading under its new name.
	draw := choose(
		field{"gpu_power_readings/power_draw", x.GPUPowerReadings.PowerDraw},
		field{"gpu_power_readings/average_power_draw", x.GPUPowerReadings.AveragePowerDraw},
		field{"gpu_power_readings/instant_power_draw", x.GPUPowerReadings.InstantPowerDraw},
		field{"power_readings/power_draw", x.PowerReadings.PowerDraw},
		field{"power_readings/average_power_draw", x.PowerReadings.AveragePowerDraw},
		field{"power_readings/instant_power_draw", x.PowerReadings.InstantPowerDraw},
	)
	g.PowerDrawWatts = r.f64(draw.query, draw.raw, "W")
	// The enforced limit is the one the GPU is held to; older drivers print
	// it as enforced_power_limit, newer ones as current_power_limit.
	limit := choose(
		field{"gpu_power_readings/current_power_limit", x.GPUPowerReadings.CurrentPowerLimit},
		field{"gpu_power_readings/enforced_power_limit", x.GPUPowerReadings.EnforcedPowerLimit},
		field{"power_readings/enforced_power_limit", x.PowerReadings.EnforcedPowerLimit},
		field{"power_readings/current_power_limit", x.PowerReadings.CurrentPowerLimit},
		field{"power_readings/power_limit", x.PowerReadings.PowerLimit},
	)
	g.PowerLimitWatts = r.f64(limit.query, limit.raw, "W")

	g.SMClockMHz = r.f64("clocks/sm_clock", x.SMClock, "MHz")
	g.MemoryClockMHz = r.f64("clocks/mem_clock", x.MemClock, "MHz")
	g.ClockEventReasons = r.reasons(x)

	g.ECCModeEnabled = r.flag("ecc_mode/current_ecc", x.CurrentECC)
	r.blockText("ecc_errors", x.ECCErrors.Text)
	g.ECC.VolatileCorrected, g.ECC.VolatileUncorrected = r.eccTotals("ecc_errors/volatile", &x.ECCErrors.Volatile)
	g.ECC.AggregateCorrected, g.ECC.AggregateUncorrected = r.eccTotals("ecc_errors/aggregate", &x.ECCErrors.Aggregate)
	g.RetiredPages = r.retired(&x.RetiredPages)
	g.RemappedRows = r.remapped(&x.RemappedRows)

	g.PCIe = gpu.PCIe{
		ReplayCounter:    r.u64("pci/replay_counter", x.PCI.ReplayCounter, ""),
		LinkGenCurrent:   r.u64("pci/pci_gpu_link_info/pcie_gen/current_link_gen", x.PCI.CurrentLinkGen, ""),
		LinkGenMax:       r.u64("pci/pci_gpu_link_info/pcie_gen/max_link_gen", x.PCI.MaxLinkGen, ""),
		LinkWidthCurrent: r.u64("pci/pci_gpu_link_info/link_widths/current_link_width", x.PCI.CurLinkWidth, "x"),
		LinkWidthMax:     r.u64("pci/pci_gpu_link_info/link_widths/max_link_width", x.PCI.MaxLinkWidth, "x"),
	}

	g.RecoveryAction = r.recovery("gpu_recovery_action", x.RecoveryAction)
	g.ResetRequired = r.flag("gpu_reset_status/reset_required", x.ResetRequired)
	g.DrainAndResetRecommended = r.flag("gpu_reset_status/drain_and_reset_recommended", x.DrainAndResetRecommended)

	g.PersistenceMode = r.flag("persistence_mode", x.PersistenceMode)
	g.MIGEnabled = r.flag("mig_mode/current_mig", x.CurrentMIG)
	g.MIGDevices = r.migDevices(x.MIGDevices)

	g.FabricState = r.text("fabric/state", x.FabricState)
	g.FabricStatus = r.text("fabric/status", x.FabricStatus)
	return g
}

type field struct{ query, raw string }

// choose picks, among elements that name one reading in different schema
// versions, the first that holds a value; failing that the first that
// holds an NVML error, so the error is still recorded.
func choose(fs ...field) field {
	var failure field
	for _, f := range fs {
		switch _, k := classify(f.raw); k {
		case present:
			return f
		case failed:
			if failure.query == "" {
				failure = f
			}
		}
	}
	return failure
}

// blockText checks the text of an element that normally has children:
// nvidia-smi replaces the whole block with "N/A" or an error string when
// the query behind it fails.
func (r recorder) blockText(query, text string) {
	if s, ok := r.value(query, text); ok {
		r.add(query, false, "unexpected text %q where child elements belong", s)
	}
}

// reasonBits maps the clocks_{event,throttle}_reason_* suffixes to NVML's
// bits. display_clock_setting is the spelling some DTDs use.
var reasonBits = map[string]uint64{
	"gpu_idle":                    gpu.ClockEventGPUIdle,
	"applications_clocks_setting": gpu.ClockEventAppSetting,
	"sw_power_cap":                gpu.ClockEventSwPowerCap,
	"hw_slowdown":                 gpu.ClockEventHwSlowdown,
	"sync_boost":                  gpu.ClockEventSyncBoost,
	"sw_thermal_slowdown":         gpu.ClockEventSwThermal,
	"hw_thermal_slowdown":         gpu.ClockEventHwThermal,
	"hw_power_brake_slowdown":     gpu.ClockEventHwPowerBrake,
	"display_clocks_setting":      gpu.ClockEventDisplayClock,
	"display_clock_setting":       gpu.ClockEventDisplayClock,
}

// reasons rebuilds NVML's bitmask from the per-reason Active/Not Active
// elements. It is nil when no reason could be read; reasons it does not
// know (newer drivers add some) are skipped, as they have no bit here.
func (r recorder) reasons(x *smiGPU) *uint64 {
	b, query := x.EventReasons, "clocks_event_reasons"
	if b == nil {
		b, query = x.ThrottleReasons, "clocks_throttle_reasons"
	}
	if b == nil {
		return nil
	}
	r.blockText(query, string(b.text))
	var mask uint64
	known := false
	for _, it := range b.items {
		name := strings.TrimPrefix(strings.TrimPrefix(it.name, "clocks_event_reason_"), "clocks_throttle_reason_")
		bit, ok := reasonBits[name]
		if !ok {
			continue
		}
		q := query + "/" + it.name
		s, ok := r.value(q, it.value)
		if !ok {
			continue
		}
		switch strings.ToLower(s) {
		case "active":
			mask |= bit
			known = true
		case "not active":
			known = true
		default:
			r.add(q, false, "cannot parse %q as Active/Not Active", s)
		}
	}
	if !known {
		return nil
	}
	return gpu.U64(mask)
}

func (r recorder) recovery(query, raw string) *gpu.RecoveryAction {
	s, ok := r.value(query, raw)
	if !ok {
		return nil
	}
	for a := gpu.RecoveryNone; a <= gpu.RecoveryDrainAndReset; a++ {
		if strings.EqualFold(s, a.String()) {
			return &a
		}
	}
	r.add(query, false, "unknown recovery action %q", s)
	return nil
}

// index reads a MIG index or instance id. These are plain ints in the
// snapshot, so an unreadable one becomes fallback (-1 for ids, which are
// never negative, so consumers can tell it from a real id 0).
func (r recorder) index(query, raw string, fallback int) int {
	v := r.u64(query, raw, "")
	if v == nil {
		return fallback
	}
	if *v > math.MaxInt32 {
		r.add(query, false, "%d is out of range", *v)
		return fallback
	}
	return int(*v)
}

func (r recorder) migDevices(xs []smiMIG) []gpu.MIGDevice {
	if len(xs) == 0 {
		return nil
	}
	out := make([]gpu.MIGDevice, 0, len(xs))
	for i := range xs {
		x := &xs[i]
		q := fmt.Sprintf("mig_devices/mig_device[%d]", i)
		d := gpu.MIGDevice{
			Index:             r.index(q+"/index", x.Index, i),
			GPUInstanceID:     r.index(q+"/gpu_instance_id", x.GPUInstanceID, -1),
			ComputeInstanceID: r.index(q+"/compute_instance_id", x.ComputeInstanceID, -1),
			MemoryUsedBytes:   r.bytes(q+"/fb_memory_usage/used", x.FBMemory.Used),
			MemoryTotalBytes:  r.bytes(q+"/fb_memory_usage/total", x.FBMemory.Total),
		}
		// Recent drivers (535 in the A100 fixture) print only the volatile
		// SRAM uncorrectable count per MIG device: ECCCorrected stays nil.
		d.ECCCorrected, d.ECCUncorrected = r.eccTotals(q+"/ecc_error_count/volatile_count", &x.ECC)
		out = append(out, d)
	}
	return out
}
