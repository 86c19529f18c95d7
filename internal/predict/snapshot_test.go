package predict

import (
	"testing"
	"time"

	"github.com/gpuheal/gpuheal/internal/gpu"
)

func TestSampleFromSnapshot(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	g := &gpu.GPUSnapshot{
		TemperatureCelsius: gpu.F64(71), MemoryUsedBytes: gpu.U64(3 << 30), ClockEventReasons: gpu.U64(0x40),
		ECC:          gpu.ECCCounts{VolatileCorrected: gpu.U64(5)},
		RemappedRows: &gpu.RemappedRows{Correctable: 2, Pending: true},
		PCIe:         gpu.PCIe{ReplayCounter: gpu.U64(9), LinkWidthCurrent: gpu.U64(8), LinkWidthMax: gpu.U64(16)},
		NVLink: []gpu.NVLink{
			{Link: 0, Active: true, CRCFlit: gpu.U64(3)},
			{Link: 1, Active: false, CRCFlit: gpu.U64(4), Replay: gpu.U64(1)},
		},
		XidEvents: []gpu.XidEvent{{Xid: 119, Time: at}},
	}
	s := SampleFromSnapshot(at, g)
	if s.Gauges[GaugeTemperatureC] != 71 || s.Gauges[GaugeMemoryUsedMiB] != 3072 || s.Gauges[GaugePowerW] == s.Gauges[GaugePowerW] {
		t.Errorf("gauges %v: want temperature 71, 3072 MiB used, power unreported (NaN)", s.Gauges)
	}
	wantRead := uint16(1<<CounterECCCorrected | 1<<CounterRemappedCorrectable | 1<<CounterRemappedUncorrectable |
		1<<CounterPCIeReplay | 1<<CounterNVLinkCRCFlit | 1<<CounterNVLinkReplay)
	if s.CountersRead != wantRead {
		t.Errorf("counters read %b, want %b: unreported counters must stay unread", s.CountersRead, wantRead)
	}
	if s.Counters[CounterNVLinkCRCFlit] != 7 || s.NVLinkUp != 1 || s.NVLinkTotal != 2 {
		t.Errorf("NVLink: CRC %d, up %d of %d; want 7, 1 of 2", s.Counters[CounterNVLinkCRCFlit], s.NVLinkUp, s.NVLinkTotal)
	}
	if !s.RemappedRowsPending || s.PCIeLinkWidth != 8 || s.ClockEventReasons != 0x40 || len(s.Xids) != 1 || s.Xids[0] != 119 {
		t.Errorf("sample %+v", s)
	}
}
