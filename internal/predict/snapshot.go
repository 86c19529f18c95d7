package predict

import (
	"time"

	"github.com/gpuheal/gpuheal/internal/gpu"
)

// SampleFromSnapshot converts one GPU of an agent snapshot. Xid events come
// from the snapshot (the NVML event set); the agent appends the kernel
// log's Xids for the GPU if it reads them there instead. Readings the
// backend did not deliver stay unreported (NaN gauges, unread counters).
func SampleFromSnapshot(at time.Time, g *gpu.GPUSnapshot) Sample {
	s := Sample{Time: at, Missing: g.Missing}
	for i := range s.Gauges {
		s.Gauges[i] = NaN
	}
	gauge(&s, GaugeUtilizationPercent, g.UtilizationGPUPercent)
	if g.MemoryUsedBytes != nil {
		s.Gauges[GaugeMemoryUsedMiB] = float32(*g.MemoryUsedBytes >> 20)
	}
	gauge(&s, GaugeTemperatureC, g.TemperatureCelsius)
	gauge(&s, GaugeMemoryTemperatureC, g.MemoryTemperatureCelsius)
	gauge(&s, GaugePowerW, g.PowerDrawWatts)
	gauge(&s, GaugeSMClockMHz, g.SMClockMHz)
	if g.ClockEventReasons != nil {
		s.ClockEventReasons = *g.ClockEventReasons
	}
	if g.RecoveryAction != nil {
		s.RecoveryAction = uint8(min(*g.RecoveryAction, 255))
	}
	s.PCIeLinkGen = small(g.PCIe.LinkGenCurrent)
	s.PCIeLinkGenMax = small(g.PCIe.LinkGenMax)
	s.PCIeLinkWidth = small(g.PCIe.LinkWidthCurrent)
	s.PCIeLinkWidthMax = small(g.PCIe.LinkWidthMax)

	counter(&s, CounterECCCorrected, g.ECC.VolatileCorrected)
	counter(&s, CounterECCUncorrected, g.ECC.VolatileUncorrected)
	counter(&s, CounterECCAggregateCorrected, g.ECC.AggregateCorrected)
	counter(&s, CounterECCAggregateUncorrected, g.ECC.AggregateUncorrected)
	if r := g.RemappedRows; r != nil {
		counter(&s, CounterRemappedCorrectable, &r.Correctable)
		counter(&s, CounterRemappedUncorrectable, &r.Uncorrectable)
		s.RemappedRowsPending, s.RemappedRowsFailure = r.Pending, r.Failure
	}
	counter(&s, CounterPCIeReplay, g.PCIe.ReplayCounter)
	nvlinks(&s, g.NVLink)
	for _, e := range g.XidEvents {
		s.Xids = append(s.Xids, uint32(min(e.Xid, 1<<32-1)))
	}
	return s
}

func gauge(s *Sample, i int, v *float64) {
	if v != nil {
		s.Gauges[i] = float32(*v)
	}
}

func counter(s *Sample, i int, v *uint64) {
	if v != nil {
		s.Counters[i] = *v
		s.CountersRead |= 1 << i
	}
}

func small(v *uint64) uint8 {
	if v == nil {
		return 0
	}
	return uint8(min(*v, 255))
}

// nvlinks sums the per-link counters. A counter counts as read when at
// least one link reported it: links that report nothing add nothing.
func nvlinks(s *Sample, links []gpu.NVLink) {
	s.NVLinkTotal = uint8(min(len(links), 255))
	for _, l := range links {
		if l.Active {
			s.NVLinkUp++
		}
		for i, v := range [...]*uint64{l.CRCFlit, l.CRCData, l.Replay, l.Recovery} {
			if v != nil {
				s.Counters[CounterNVLinkCRCFlit+i] += *v
				s.CountersRead |= 1 << (CounterNVLinkCRCFlit + i)
			}
		}
	}
}
