//go:build cgo

package nvml

import (
	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuheal/gpuheal/internal/gpu"
)

func readMemoryHealth(s *session, h nvml.Device, g *gpu.GPUSnapshot) {
	if current, ok := get(s, "GetEccMode", func() (nvml.EnableState, nvml.Return) {
		current, _, ret := h.GetEccMode()
		return current, ret
	}); ok {
		g.ECCModeEnabled = gpu.Bool(current == nvml.FEATURE_ENABLED)
	}
	// With ECC off the counters are meaningless (and some drivers answer
	// with stale values), so they stay nil.
	if g.ECCModeEnabled == nil || *g.ECCModeEnabled {
		g.ECC = gpu.ECCCounts{
			VolatileCorrected:    eccCount(s, h, "volatile corrected", nvml.MEMORY_ERROR_TYPE_CORRECTED, nvml.VOLATILE_ECC),
			VolatileUncorrected:  eccCount(s, h, "volatile uncorrected", nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.VOLATILE_ECC),
			AggregateCorrected:   eccCount(s, h, "aggregate corrected", nvml.MEMORY_ERROR_TYPE_CORRECTED, nvml.AGGREGATE_ECC),
			AggregateUncorrected: eccCount(s, h, "aggregate uncorrected", nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.AGGREGATE_ECC),
		}
	}
	g.RetiredPages = retiredPages(s, h)
	g.RemappedRows = remappedRows(s, h)
}

func eccCount(s *session, h nvml.Device, what string, t nvml.MemoryErrorType, c nvml.EccCounterType) *uint64 {
	v, ok := get(s, "GetTotalEccErrors("+what+")", func() (uint64, nvml.Return) {
		return h.GetTotalEccErrors(t, c)
	})
	if !ok {
		return nil
	}
	return gpu.U64(v)
}

// retiredPages is the pre-Ampere mechanism; Ampere and later answer
// NOT_SUPPORTED and report through remapped rows instead.
func retiredPages(s *session, h nvml.Device) *gpu.RetiredPages {
	count := func(what string, cause nvml.PageRetirementCause) (uint64, bool) {
		pages, ok := get(s, "GetRetiredPages("+what+")", func() ([]uint64, nvml.Return) {
			return h.GetRetiredPages(cause)
		})
		return uint64(len(pages)), ok
	}
	sbe, ok := count("single-bit", nvml.PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS)
	if !ok {
		return nil
	}
	dbe, ok := count("double-bit", nvml.PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR)
	if !ok {
		return nil
	}
	pending, _ := get(s, "GetRetiredPagesPendingStatus", h.GetRetiredPagesPendingStatus)
	return &gpu.RetiredPages{SingleBit: sbe, DoubleBit: dbe, Pending: pending == nvml.FEATURE_ENABLED}
}

func remappedRows(s *session, h nvml.Device) *gpu.RemappedRows {
	r, ok := get(s, "GetRemappedRows", func() (gpu.RemappedRows, nvml.Return) {
		corr, unc, pending, failed, ret := h.GetRemappedRows()
		if corr < 0 || unc < 0 {
			return gpu.RemappedRows{}, nvml.ERROR_UNKNOWN
		}
		return gpu.RemappedRows{Correctable: uint64(corr), Uncorrectable: uint64(unc), Pending: pending, Failure: failed}, ret
	})
	if !ok {
		return nil
	}
	return &r
}
