package smi

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/gpuheal/gpuheal/internal/gpu"
)

const mib = 1 << 20

func ra(a gpu.RecoveryAction) *gpu.RecoveryAction { return &a }

func parseFile(t testing.TB, name string) *gpu.NodeSnapshot {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	snap, err := Parse(f)
	if err != nil {
		t.Fatalf("Parse(%s): %v", name, err)
	}
	return snap
}

// allZeroECC is what every ECC-capable fixture GPU reports: counters
// present and zero, which must not be confused with nil.
var allZeroECC = gpu.ECCCounts{
	VolatileCorrected: gpu.U64(0), VolatileUncorrected: gpu.U64(0),
	AggregateCorrected: gpu.U64(0), AggregateUncorrected: gpu.U64(0),
}

func a100MIG(index, gi int) gpu.MIGDevice {
	return gpu.MIGDevice{
		Index: index, GPUInstanceID: gi, ComputeInstanceID: 0,
		MemoryUsedBytes: gpu.U64(12 * mib), MemoryTotalBytes: gpu.U64(19968 * mib),
		ECCCorrected: nil, ECCUncorrected: gpu.U64(0),
	}
}

// TestParseFixtures compares whole snapshots, so every field is asserted:
// the values below were read off the XML by hand.
func TestParseFixtures(t *testing.T) {
	tests := []struct {
		file string
		want *gpu.NodeSnapshot
	}{{
		// DTD v12, driver 535: clocks_event_reasons, gpu_reset_status,
		// MIG on, utilization N/A, retired pages and remapped rows N/A.
		// Captured with -i: attached_gpus says 4, one <gpu> is printed.
		file: "a100-sxm4-v12.xml",
		want: &gpu.NodeSnapshot{
			Backend: "smi", DriverVersion: "535.54.03", CUDADriverVersion: "12.2", FoundGPUs: 4,
			Errors: []gpu.QueryError{{Query: "attached_gpus", Message: "node: attached_gpus: driver reports 4 GPUs but the output describes 1"}},
			GPUs: []gpu.GPUSnapshot{{
				Index: 0, UUID: "GPU-513536b6-7d19-9063-b049-1e69664bb298", PCIBusID: "0000:01:00.0",
				Name: "NVIDIA A100-SXM4-80GB", Serial: "1650522003820", VBIOS: "92.00.36.00.02", MinorNum: gpu.U64(1),
				MemoryUsedBytes: gpu.U64(50 * mib), MemoryTotalBytes: gpu.U64(81920 * mib),
				TemperatureCelsius: gpu.F64(27), MemoryTemperatureCelsius: gpu.F64(44),
				PowerDrawWatts: gpu.F64(67.03), PowerLimitWatts: gpu.F64(500),
				SMClockMHz: gpu.F64(1275), MemoryClockMHz: gpu.F64(1593),
				ClockEventReasons: gpu.U64(0),
				ECCModeEnabled:    gpu.Bool(true), ECC: allZeroECC,
				PCIe: gpu.PCIe{
					ReplayCounter: gpu.U64(0), LinkGenCurrent: gpu.U64(4), LinkGenMax: gpu.U64(4),
					LinkWidthCurrent: gpu.U64(16), LinkWidthMax: gpu.U64(16),
				},
				ResetRequired: gpu.Bool(false), DrainAndResetRecommended: gpu.Bool(false),
				PersistenceMode: gpu.Bool(false), MIGEnabled: gpu.Bool(true),
				MIGDevices: []gpu.MIGDevice{a100MIG(0, 3), a100MIG(1, 4), a100MIG(2, 5), a100MIG(3, 6)},
			}},
		},
	}, {
		// DTD v11, driver 515: clocks_throttle_reasons, power_readings
		// with enforced_power_limit, retired pages supported, a x8 link.
		file: "tesla-t4.xml",
		want: &gpu.NodeSnapshot{
			Backend: "smi", DriverVersion: "515.105.01", CUDADriverVersion: "11.7", FoundGPUs: 1,
			GPUs: []gpu.GPUSnapshot{{
				Index: 0, UUID: "GPU-d37e67a5-91dd-3774-a5cb-99096249601a", PCIBusID: "0000:00:1e.0",
				Name: "Tesla T4", Serial: "0000000000000", VBIOS: "90.04.84.00.06", MinorNum: gpu.U64(0),
				UtilizationGPUPercent: gpu.F64(0), UtilizationMemoryPercent: gpu.F64(0),
				MemoryUsedBytes: gpu.U64(1032 * mib), MemoryTotalBytes: gpu.U64(15360 * mib),
				TemperatureCelsius: gpu.F64(40),
				PowerDrawWatts:     gpu.F64(26.78), PowerLimitWatts: gpu.F64(70),
				SMClockMHz: gpu.F64(585), MemoryClockMHz: gpu.F64(5000),
				ClockEventReasons: gpu.U64(0),
				ECCModeEnabled:    gpu.Bool(true), ECC: allZeroECC,
				RetiredPages: &gpu.RetiredPages{SingleBit: 0, DoubleBit: 0, Pending: false},
				PCIe: gpu.PCIe{
					ReplayCounter: gpu.U64(0), LinkGenCurrent: gpu.U64(3), LinkGenMax: gpu.U64(3),
					LinkWidthCurrent: gpu.U64(8), LinkWidthMax: gpu.U64(16),
				},
				PersistenceMode: gpu.Bool(false),
			}},
		},
	}, {
		// DTD v11 on Ampere: the GPU is idle (gpu_idle Active), remapped
		// rows are supported and retired pages are not.
		file: "a10g.xml",
		want: &gpu.NodeSnapshot{
			Backend: "smi", DriverVersion: "515.105.01", CUDADriverVersion: "11.7", FoundGPUs: 1,
			GPUs: []gpu.GPUSnapshot{{
				Index: 0, UUID: "GPU-9a9a6c50-2a47-2f51-a902-b82c3b127e94", PCIBusID: "0000:00:1e.0",
				Name: "NVIDIA A10G", Serial: "0000000000000", VBIOS: "94.02.75.00.01", MinorNum: gpu.U64(0),
				UtilizationGPUPercent: gpu.F64(0), UtilizationMemoryPercent: gpu.F64(0),
				MemoryUsedBytes: gpu.U64(22 * mib), MemoryTotalBytes: gpu.U64(23028 * mib),
				TemperatureCelsius: gpu.F64(17),
				PowerDrawWatts:     gpu.F64(25.58), PowerLimitWatts: gpu.F64(300),
				SMClockMHz: gpu.F64(210), MemoryClockMHz: gpu.F64(405),
				ClockEventReasons: gpu.U64(gpu.ClockEventGPUIdle),
				ECCModeEnabled:    gpu.Bool(true), ECC: allZeroECC,
				RemappedRows: &gpu.RemappedRows{Correctable: 0, Uncorrectable: 0, Pending: false, Failure: false},
				PCIe: gpu.PCIe{
					ReplayCounter: gpu.U64(0), LinkGenCurrent: gpu.U64(1), LinkGenMax: gpu.U64(4),
					LinkWidthCurrent: gpu.U64(8), LinkWidthMax: gpu.U64(16),
				},
				PersistenceMode: gpu.Bool(false),
			}},
		},
	}, {
		// DTD v13, driver 595: average_/instant_power_draw, split SRAM
		// uncorrectable counters (all N/A on GeForce), gpu_recovery_action
		// and no gpu_reset_status.
		file: "rtx-3080-v13.xml",
		want: &gpu.NodeSnapshot{
			Backend: "smi", DriverVersion: "595.58.03", CUDADriverVersion: "13.2", FoundGPUs: 1,
			GPUs: []gpu.GPUSnapshot{{
				Index: 0, UUID: "GPU-19d6d965-2acc-f646-00f8-4c76979aabb4", PCIBusID: "0000:0c:00.0",
				Name: "NVIDIA GeForce RTX 3080", Serial: "REDACTED", VBIOS: "94.02.71.40.72", MinorNum: gpu.U64(0),
				UtilizationGPUPercent: gpu.F64(65), UtilizationMemoryPercent: gpu.F64(9),
				MemoryUsedBytes: gpu.U64(9184 * mib), MemoryTotalBytes: gpu.U64(10240 * mib),
				TemperatureCelsius: gpu.F64(27),
				PowerDrawWatts:     gpu.F64(139.62), PowerLimitWatts: gpu.F64(320),
				SMClockMHz: gpu.F64(1950), MemoryClockMHz: gpu.F64(9251),
				ClockEventReasons: gpu.U64(0),
				PCIe: gpu.PCIe{
					ReplayCounter: gpu.U64(0), LinkGenCurrent: gpu.U64(4), LinkGenMax: gpu.U64(4),
					LinkWidthCurrent: gpu.U64(16), LinkWidthMax: gpu.U64(16),
				},
				RecoveryAction:  ra(gpu.RecoveryNone),
				PersistenceMode: gpu.Bool(false),
			}},
		},
	}, {
		// Hand-written old schema on a sick node (see the file's comment).
		file: "synthetic-v100-v10-faulty.xml",
		want: &gpu.NodeSnapshot{
			Backend: "smi", DriverVersion: "460.73.01", CUDADriverVersion: "11.2", FoundGPUs: 2,
			GPUs: []gpu.GPUSnapshot{{
				Index: 0, UUID: "GPU-0f3c2a9e-6b1d-4c55-8e2f-9a7b1c3d5e70", PCIBusID: "0000:1a:00.0",
				Name: "Tesla V100-SXM2-32GB", Serial: "0323218012345", VBIOS: "88.00.80.00.04", MinorNum: gpu.U64(0),
				UtilizationGPUPercent: gpu.F64(100), UtilizationMemoryPercent: gpu.F64(87),
				MemoryUsedBytes: gpu.U64(31000 * mib), MemoryTotalBytes: gpu.U64(32510 * mib),
				TemperatureCelsius: gpu.F64(91), MemoryTemperatureCelsius: gpu.F64(88),
				PowerDrawWatts: gpu.F64(301.2), PowerLimitWatts: gpu.F64(300),
				SMClockMHz: gpu.F64(1005), MemoryClockMHz: gpu.F64(877),
				ClockEventReasons: gpu.U64(gpu.ClockEventHwSlowdown | gpu.ClockEventHwThermal | gpu.ClockEventSwThermal),
				ECCModeEnabled:    gpu.Bool(true),
				ECC: gpu.ECCCounts{
					VolatileCorrected: gpu.U64(12), VolatileUncorrected: gpu.U64(2),
					AggregateCorrected: gpu.U64(340), AggregateUncorrected: gpu.U64(3),
				},
				RetiredPages: &gpu.RetiredPages{SingleBit: 5, DoubleBit: 2, Pending: true},
				PCIe: gpu.PCIe{
					ReplayCounter: gpu.U64(137), LinkGenCurrent: gpu.U64(3), LinkGenMax: gpu.U64(3),
					LinkWidthCurrent: gpu.U64(8), LinkWidthMax: gpu.U64(16),
				},
				PersistenceMode: gpu.Bool(true),
			}, {
				Index: 1, UUID: "GPU-5d8e4b21-3a7c-49f0-b6d2-0e1f2a3b4c5d", PCIBusID: "0000:1b:00.0",
				Name: "Tesla V100-SXM2-32GB", Serial: "0323218012346", VBIOS: "88.00.80.00.04", MinorNum: gpu.U64(1),
				UtilizationGPUPercent: gpu.F64(0), UtilizationMemoryPercent: gpu.F64(0),
				MemoryUsedBytes: gpu.U64(0), MemoryTotalBytes: gpu.U64(32510 * mib),
				PowerLimitWatts: gpu.F64(300), MemoryClockMHz: gpu.F64(877),
				ECCModeEnabled: gpu.Bool(true),
				ECC:            gpu.ECCCounts{VolatileCorrected: gpu.U64(0), VolatileUncorrected: gpu.U64(0)},
				RetiredPages:   &gpu.RetiredPages{},
				PCIe: gpu.PCIe{
					ReplayCounter: gpu.U64(0), LinkGenCurrent: gpu.U64(3), LinkGenMax: gpu.U64(3),
					LinkWidthCurrent: gpu.U64(16), LinkWidthMax: gpu.U64(16),
				},
				PersistenceMode: gpu.Bool(true),
				Errors: []gpu.QueryError{
					{Query: "power_readings/power_draw", Message: `gpu 1 (0000:1b:00.0): power_readings/power_draw: nvidia-smi reported "Unknown Error"`},
					{Query: "clocks/sm_clock", Message: `gpu 1 (0000:1b:00.0): clocks/sm_clock: nvidia-smi reported "Timeout"`, Timeout: true},
					{Query: "clocks_throttle_reasons", Message: `gpu 1 (0000:1b:00.0): clocks_throttle_reasons: nvidia-smi reported "Unknown Error"`},
					{Query: "temperature/gpu_temp", Message: `gpu 1 (0000:1b:00.0): temperature/gpu_temp: nvidia-smi reported "Unknown Error"`},
				},
			}},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			got := parseFile(t, tt.file)
			// Errors are compared in any order: the order follows the
			// code, not the XML.
			if diff := cmp.Diff(tt.want, got, sortErrors); diff != "" {
				t.Errorf("Parse(%s) mismatch (-want +got):\n%s", tt.file, diff)
			}
		})
	}
}

var sortErrors = cmpopts.SortSlices(func(a, b gpu.QueryError) bool { return a.Query < b.Query })
