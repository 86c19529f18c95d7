//go:build cgo

package nvml

import (
	"fmt"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
	testclock "k8s.io/utils/clock/testing"

	"github.com/gpuheal/gpuheal/internal/gpu"
)

var t0 = time.Date(2025, 2, 23, 16, 24, 18, 0, time.UTC)

// fixture is a mock DGX whose devices answer every call gpuheal makes
// with values derived from the GPU index, so expectations can be computed.
type fixture struct {
	srv     *server.Server
	links   int // NVLinks per GPU
	events  chan nvml.EventData
	clock   *testclock.FakeClock
	freed   chan struct{}
	retired bool // answer page-retirement calls (pre-Ampere behaviour)
}

func newH100(t *testing.T) *fixture { return newFixture(t, dgxh100.New(), 18) }
func newA100(t *testing.T) *fixture { return newFixture(t, dgxa100.New(), 12) }

func newFixture(t *testing.T, srv *server.Server, links int) *fixture {
	t.Helper()
	f := &fixture{
		srv:    srv,
		links:  links,
		events: make(chan nvml.EventData),
		clock:  testclock.NewFakeClock(t0),
		freed:  make(chan struct{}),
	}
	for i := range srv.Devices {
		f.answer(f.dev(i), i)
	}
	srv.EventSetCreateFunc = func() (nvml.EventSet, nvml.Return) {
		return &mock.EventSet{
			WaitFunc: f.wait,
			FreeFunc: func() nvml.Return { close(f.freed); return nvml.SUCCESS },
		}, nvml.SUCCESS
	}
	return f
}

func (f *fixture) dev(i int) *server.Device { return f.srv.Devices[i].(*server.Device) }

// wait is the event set's Wait: an event when the test sends one, else a
// timeout after the requested time, as the driver does.
func (f *fixture) wait(ms uint32) (nvml.EventData, nvml.Return) {
	select {
	case e := <-f.events:
		return e, nvml.SUCCESS
	case <-time.After(time.Duration(ms) * time.Millisecond):
		return nvml.EventData{}, nvml.ERROR_TIMEOUT
	}
}

func (f *fixture) options() Options {
	return Options{Lib: f.srv, Clock: f.clock, CallTimeout: time.Minute, EventWait: 5 * time.Millisecond}
}

func (f *fixture) answer(d *server.Device, i int) {
	d.MemoryInfo.Used = uint64(i+1) << 30
	d.GetPciInfoFunc = func() (nvml.PciInfo, nvml.Return) {
		var p nvml.PciInfo
		for j, c := range []byte(fmt.Sprintf("00000000:%02X:00.0", 0x18+i*0x10)) {
			p.BusId[j] = int8(c)
		}
		return p, nvml.SUCCESS
	}
	d.GetSerialFunc = func() (string, nvml.Return) { return fmt.Sprintf("16532200%05d", i), nvml.SUCCESS }
	d.GetVbiosVersionFunc = func() (string, nvml.Return) { return "96.00.74.00.01", nvml.SUCCESS }
	d.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) {
		return nvml.Utilization{Gpu: uint32(50 + i), Memory: 20}, nvml.SUCCESS
	}
	d.GetTemperatureFunc = func(s nvml.TemperatureSensors) (uint32, nvml.Return) {
		if s != nvml.TEMPERATURE_GPU {
			return 0, nvml.ERROR_INVALID_ARGUMENT
		}
		return uint32(40 + i), nvml.SUCCESS
	}
	d.GetPowerUsageFunc = func() (uint32, nvml.Return) { return 350500, nvml.SUCCESS }
	d.GetEnforcedPowerLimitFunc = func() (uint32, nvml.Return) { return 700000, nvml.SUCCESS }
	d.GetClockInfoFunc = func(c nvml.ClockType) (uint32, nvml.Return) {
		switch c {
		case nvml.CLOCK_SM:
			return 1980, nvml.SUCCESS
		case nvml.CLOCK_MEM:
			return 2619, nvml.SUCCESS
		}
		return 0, nvml.ERROR_INVALID_ARGUMENT
	}
	d.GetCurrentClocksEventReasonsFunc = func() (uint64, nvml.Return) {
		return uint64(nvml.ClocksEventReasonGpuIdle) << (i % 2), nvml.SUCCESS
	}
	d.GetEccModeFunc = func() (nvml.EnableState, nvml.EnableState, nvml.Return) {
		return nvml.FEATURE_ENABLED, nvml.FEATURE_ENABLED, nvml.SUCCESS
	}
	d.GetTotalEccErrorsFunc = func(t nvml.MemoryErrorType, c nvml.EccCounterType) (uint64, nvml.Return) {
		return eccValue(i, t, c), nvml.SUCCESS
	}
	d.GetRetiredPagesFunc = func(c nvml.PageRetirementCause) ([]uint64, nvml.Return) {
		if !f.retired {
			return nil, nvml.ERROR_NOT_SUPPORTED
		}
		if c == nvml.PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR {
			return []uint64{0x1000}, nvml.SUCCESS
		}
		return []uint64{0x2000, 0x3000}, nvml.SUCCESS
	}
	d.GetRetiredPagesPendingStatusFunc = func() (nvml.EnableState, nvml.Return) {
		if !f.retired {
			return 0, nvml.ERROR_NOT_SUPPORTED
		}
		return nvml.FEATURE_ENABLED, nvml.SUCCESS
	}
	d.GetRemappedRowsFunc = func() (int, int, bool, bool, nvml.Return) {
		return i, i % 2, i == 7, false, nvml.SUCCESS
	}
	d.GetFieldValuesFunc = func(vals []nvml.FieldValue) nvml.Return {
		for j := range vals {
			v := &vals[j]
			switch v.FieldId {
			case nvml.FI_DEV_MEMORY_TEMP:
				setUint(v, uint64(45+i))
			case nvml.FI_DEV_GET_GPU_RECOVERY_ACTION:
				setUint(v, uint64(i%5))
			default:
				v.NvmlReturn = uint32(nvml.ERROR_INVALID_ARGUMENT)
			}
		}
		return nvml.SUCCESS
	}
	d.GetPcieReplayCounterFunc = func() (int, nvml.Return) { return 3 * i, nvml.SUCCESS }
	d.GetCurrPcieLinkGenerationFunc = func() (int, nvml.Return) { return 5, nvml.SUCCESS }
	d.GetMaxPcieLinkGenerationFunc = func() (int, nvml.Return) { return 5, nvml.SUCCESS }
	d.GetCurrPcieLinkWidthFunc = func() (int, nvml.Return) { return 16 >> (i / 7), nvml.SUCCESS }
	d.GetMaxPcieLinkWidthFunc = func() (int, nvml.Return) { return 16, nvml.SUCCESS }
	d.GetPersistenceModeFunc = func() (nvml.EnableState, nvml.Return) { return nvml.FEATURE_ENABLED, nvml.SUCCESS }
	d.GetNvLinkStateFunc = func(l int) (nvml.EnableState, nvml.Return) {
		if l >= f.links {
			return 0, nvml.ERROR_INVALID_ARGUMENT
		}
		if i == 6 && l == 2 {
			return nvml.FEATURE_DISABLED, nvml.SUCCESS
		}
		return nvml.FEATURE_ENABLED, nvml.SUCCESS
	}
	d.GetNvLinkErrorCounterFunc = func(l int, c nvml.NvLinkErrorCounter) (uint64, nvml.Return) {
		return nvlinkValue(i, l, c), nvml.SUCCESS
	}
	d.GetGpuFabricInfoFunc = func() (nvml.GpuFabricInfo, nvml.Return) {
		return fabricInfo(i), nvml.SUCCESS
	}
	d.GetSupportedEventTypesFunc = func() (uint64, nvml.Return) { return nvml.EventTypeAll, nvml.SUCCESS }
	d.RegisterEventsFunc = func(uint64, nvml.EventSet) nvml.Return { return nvml.SUCCESS }
}

// fabricInfo: GPU 5 is still registering with the NVLink fabric, GPU 6's
// registration failed, the others completed.
func fabricInfo(i int) nvml.GpuFabricInfo {
	switch i {
	case 5:
		return nvml.GpuFabricInfo{State: nvml.GPU_FABRIC_STATE_IN_PROGRESS}
	case 6:
		return nvml.GpuFabricInfo{State: nvml.GPU_FABRIC_STATE_COMPLETED, Status: uint32(nvml.ERROR_INSUFFICIENT_RESOURCES)}
	}
	return nvml.GpuFabricInfo{State: nvml.GPU_FABRIC_STATE_COMPLETED, Status: uint32(nvml.SUCCESS)}
}

func eccValue(i int, t nvml.MemoryErrorType, c nvml.EccCounterType) uint64 {
	return uint64(100*i + 10*int(t) + int(c))
}

func nvlinkValue(i, l int, c nvml.NvLinkErrorCounter) uint64 {
	return uint64(1000*i + 10*l + int(c))
}

func setUint(v *nvml.FieldValue, x uint64) {
	v.ValueType = uint32(nvml.VALUE_TYPE_UNSIGNED_LONG_LONG)
	v.NvmlReturn = uint32(nvml.SUCCESS)
	for b := range 8 {
		v.Value[b] = byte(x >> (8 * b))
	}
}

// want is the snapshot of GPU i that answer's values produce.
func (f *fixture) want(i int) gpu.GPUSnapshot {
	d := f.dev(i)
	g := gpu.GPUSnapshot{
		Index:                    i,
		UUID:                     d.UUID,
		PCIBusID:                 fmt.Sprintf("0000:%02x:00.0", 0x18+i*0x10),
		Name:                     d.Config.Name,
		Serial:                   fmt.Sprintf("16532200%05d", i),
		VBIOS:                    "96.00.74.00.01",
		MinorNum:                 gpu.U64(uint64(i)),
		UtilizationGPUPercent:    gpu.F64(float64(50 + i)),
		UtilizationMemoryPercent: gpu.F64(20),
		MemoryUsedBytes:          gpu.U64(uint64(i+1) << 30),
		MemoryTotalBytes:         gpu.U64(d.Config.MemoryMB << 20),
		TemperatureCelsius:       gpu.F64(float64(40 + i)),
		MemoryTemperatureCelsius: gpu.F64(float64(45 + i)),
		PowerDrawWatts:           gpu.F64(350.5),
		PowerLimitWatts:          gpu.F64(700),
		SMClockMHz:               gpu.F64(1980),
		MemoryClockMHz:           gpu.F64(2619),
		ClockEventReasons:        gpu.U64(gpu.ClockEventGPUIdle << (i % 2)),
		ECCModeEnabled:           gpu.Bool(true),
		ECC: gpu.ECCCounts{
			VolatileCorrected:    gpu.U64(eccValue(i, nvml.MEMORY_ERROR_TYPE_CORRECTED, nvml.VOLATILE_ECC)),
			VolatileUncorrected:  gpu.U64(eccValue(i, nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.VOLATILE_ECC)),
			AggregateCorrected:   gpu.U64(eccValue(i, nvml.MEMORY_ERROR_TYPE_CORRECTED, nvml.AGGREGATE_ECC)),
			AggregateUncorrected: gpu.U64(eccValue(i, nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.AGGREGATE_ECC)),
		},
		RemappedRows: &gpu.RemappedRows{Correctable: uint64(i), Uncorrectable: uint64(i % 2), Pending: i == 7},
		PCIe: gpu.PCIe{
			ReplayCounter:    gpu.U64(uint64(3 * i)),
			LinkGenCurrent:   gpu.U64(5),
			LinkGenMax:       gpu.U64(5),
			LinkWidthCurrent: gpu.U64(uint64(16 >> (i / 7))),
			LinkWidthMax:     gpu.U64(16),
		},
		PersistenceMode: gpu.Bool(true),
		MIGEnabled:      gpu.Bool(false),
		FabricState:     "Completed",
		FabricStatus:    "Success",
	}
	switch i {
	case 5:
		g.FabricState, g.FabricStatus = "In Progress", ""
	case 6:
		g.FabricStatus = nvml.ERROR_INSUFFICIENT_RESOURCES.Error()
	}
	action := gpu.RecoveryAction(i % 5)
	g.RecoveryAction = &action
	if f.retired {
		g.RetiredPages = &gpu.RetiredPages{SingleBit: 2, DoubleBit: 1, Pending: true}
	}
	for l := range f.links {
		g.NVLink = append(g.NVLink, gpu.NVLink{
			Link:     l,
			Active:   !(i == 6 && l == 2),
			Replay:   gpu.U64(nvlinkValue(i, l, nvml.NVLINK_ERROR_DL_REPLAY)),
			Recovery: gpu.U64(nvlinkValue(i, l, nvml.NVLINK_ERROR_DL_RECOVERY)),
			CRCFlit:  gpu.U64(nvlinkValue(i, l, nvml.NVLINK_ERROR_DL_CRC_FLIT)),
			CRCData:  gpu.U64(nvlinkValue(i, l, nvml.NVLINK_ERROR_DL_CRC_DATA)),
		})
	}
	return g
}

func newSource(t *testing.T, opts Options) *Source {
	t.Helper()
	src, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = src.Close() })
	return src
}
