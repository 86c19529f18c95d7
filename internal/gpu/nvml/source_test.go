//go:build cgo

package nvml

import (
	"context"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/gpuheal/gpuheal/internal/gpu"
)

func TestSnapshotReadsEveryGPU(t *testing.T) {
	for _, tt := range []struct {
		name    string
		fixture func(*testing.T) *fixture
		retired bool
	}{
		{name: "dgxh100", fixture: newH100},
		{name: "dgxa100", fixture: newA100},
		{name: "dgxa100 with page retirement", fixture: newA100, retired: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := tt.fixture(t)
			f.retired = tt.retired
			src := newSource(t, f.options())
			if src.Name() != "nvml" {
				t.Errorf("Name() = %q", src.Name())
			}
			snap, err := src.Snapshot(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			want := &gpu.NodeSnapshot{
				Time:              t0,
				Backend:           "nvml",
				DriverVersion:     "550.54.15",
				CUDADriverVersion: "12.4",
				FoundGPUs:         8,
			}
			for i := range 8 {
				want.GPUs = append(want.GPUs, f.want(i))
			}
			if diff := cmp.Diff(want, snap, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("snapshot (-want +got):\n%s", diff)
			}
		})
	}
}

func TestUnsupportedIsNil(t *testing.T) {
	f := newA100(t)
	d := f.dev(2)
	d.GetSerialFunc = func() (string, nvml.Return) { return "", nvml.ERROR_NOT_SUPPORTED }
	d.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) { return nvml.Utilization{}, nvml.ERROR_NOT_SUPPORTED }
	d.GetPowerUsageFunc = func() (uint32, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
	d.GetCurrentClocksEventReasonsFunc = func() (uint64, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
	d.GetEccModeFunc = func() (nvml.EnableState, nvml.EnableState, nvml.Return) {
		return nvml.FEATURE_DISABLED, nvml.FEATURE_DISABLED, nvml.SUCCESS
	}
	d.GetRemappedRowsFunc = func() (int, int, bool, bool, nvml.Return) { return 0, 0, false, false, nvml.ERROR_NOT_SUPPORTED }
	d.GetPcieReplayCounterFunc = func() (int, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
	d.GetMigModeFunc = func() (int, int, nvml.Return) { return 0, 0, nvml.ERROR_NOT_SUPPORTED }
	d.GetNvLinkStateFunc = func(int) (nvml.EnableState, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
	d.GetFieldValuesFunc = func(vals []nvml.FieldValue) nvml.Return {
		for j := range vals {
			vals[j].NvmlReturn = uint32(nvml.ERROR_NOT_SUPPORTED)
		}
		return nvml.SUCCESS
	}

	src := newSource(t, f.options())
	snap, err := src.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := f.want(2)
	want.Serial = ""
	want.UtilizationGPUPercent, want.UtilizationMemoryPercent = nil, nil
	want.PowerDrawWatts = nil
	want.ClockEventReasons = nil
	want.ECCModeEnabled = gpu.Bool(false)
	want.ECC = gpu.ECCCounts{}
	want.RemappedRows = nil
	want.PCIe.ReplayCounter = nil
	want.MIGEnabled = nil
	want.NVLink = nil
	want.MemoryTemperatureCelsius, want.RecoveryAction = nil, nil
	if diff := cmp.Diff(want, snap.GPUs[2], cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("GPU 2 (-want +got):\n%s", diff)
	}
	if got := d.GetTotalEccErrorsCalls(); len(got) != 0 {
		t.Errorf("ECC counters read with ECC off: %d calls", len(got))
	}
}

func TestOldDriverThrottleReasons(t *testing.T) {
	f := newH100(t)
	d := f.dev(0)
	d.GetCurrentClocksEventReasonsFunc = func() (uint64, nvml.Return) { return 0, nvml.ERROR_FUNCTION_NOT_FOUND }
	d.GetCurrentClocksThrottleReasonsFunc = func() (uint64, nvml.Return) { return gpu.ClockEventHwSlowdown, nvml.SUCCESS }
	snap, err := newSource(t, f.options()).Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	g := snap.GPUs[0]
	if g.ClockEventReasons == nil || *g.ClockEventReasons != gpu.ClockEventHwSlowdown || len(g.Errors) != 0 {
		t.Errorf("ClockEventReasons = %v, errors %v; want HwSlowdown from the old call", g.ClockEventReasons, g.Errors)
	}
}

func TestCUDAVersion(t *testing.T) {
	for in, want := range map[int]string{12020: "12.2", 12040: "12.4", 11080: "11.8", 13000: "13.0", 12090: "12.9"} {
		if got := cudaVersion(in); got != want {
			t.Errorf("cudaVersion(%d) = %q, want %q", in, got, want)
		}
	}
}

func TestFieldFloat(t *testing.T) {
	v := nvml.FieldValue{ValueType: uint32(nvml.VALUE_TYPE_SIGNED_INT)}
	v.Value = [8]byte{0xfe, 0xff, 0xff, 0xff}
	if got, ok := fieldFloat(v); !ok || got != -2 {
		t.Errorf("signed int = %v, %v; want -2", got, ok)
	}
	v = nvml.FieldValue{ValueType: uint32(nvml.VALUE_TYPE_DOUBLE)}
	v.Value = [8]byte{0, 0, 0, 0, 0, 0, 0xf8, 0x3f} // 1.5
	if got, ok := fieldFloat(v); !ok || got != 1.5 {
		t.Errorf("double = %v, %v; want 1.5", got, ok)
	}
	if _, ok := fieldFloat(nvml.FieldValue{ValueType: 99}); ok {
		t.Error("unknown value type decoded")
	}
}

// A GPU in MIG mode lists its MIG devices: the populated slots, numbered
// in order, with their instance ids and memory; empty slots are skipped
// without an error, and GPUs not in MIG mode are not asked.
func TestMIGDevices(t *testing.T) {
	f := newH100(t)
	d := f.dev(2)
	d.MigMode = nvml.DEVICE_MIG_ENABLE
	d.GetMaxMigDeviceCountFunc = func() (int, nvml.Return) { return 7, nvml.SUCCESS }
	d.GetMigDeviceHandleByIndexFunc = func(slot int) (nvml.Device, nvml.Return) {
		if slot != 0 && slot != 3 {
			return nil, nvml.ERROR_NOT_FOUND
		}
		return &mock.Device{
			GetGpuInstanceIdFunc:     func() (int, nvml.Return) { return 10 + slot, nvml.SUCCESS },
			GetComputeInstanceIdFunc: func() (int, nvml.Return) { return 0, nvml.SUCCESS },
			GetMemoryInfoFunc: func() (nvml.Memory, nvml.Return) {
				return nvml.Memory{Used: uint64(slot+1) << 20, Total: 20 << 30}, nvml.SUCCESS
			},
		}, nvml.SUCCESS
	}
	snap, err := newSource(t, f.options()).Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := f.want(2)
	want.MIGEnabled = gpu.Bool(true)
	want.MIGDevices = []gpu.MIGDevice{
		{Index: 0, GPUInstanceID: 10, MemoryUsedBytes: gpu.U64(1 << 20), MemoryTotalBytes: gpu.U64(20 << 30)},
		{Index: 1, GPUInstanceID: 13, MemoryUsedBytes: gpu.U64(4 << 20), MemoryTotalBytes: gpu.U64(20 << 30)},
	}
	if diff := cmp.Diff(want, snap.GPUs[2], cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("GPU 2 in MIG mode (-want +got):\n%s", diff)
	}
	for _, g := range snap.GPUs {
		if g.Index != 2 && (len(g.MIGDevices) != 0 || len(g.Errors) != 0) {
			t.Errorf("GPU %d not in MIG mode: MIG devices %v, errors %v", g.Index, g.MIGDevices, g.Errors)
		}
	}
}
