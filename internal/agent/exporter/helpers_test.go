package exporter

import (
	"context"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/gpuheal/gpuheal/internal/gpu"
	"github.com/gpuheal/gpuheal/internal/gpu/sim"
)

var snapTime = time.Date(2025, 6, 1, 12, 0, 0, 500_000_000, time.UTC)

// hopper is a fully supported GPU, except for the readings left nil on
// purpose (memory temperature, aggregate ECC, max PCIe generation, one
// NVLink replay counter) to prove that nil is skipped, not exported as 0.
func hopper() gpu.GPUSnapshot {
	ra := gpu.RecoveryGPUReset
	return gpu.GPUSnapshot{
		Index: 0, UUID: "GPU-aaaa", PCIBusID: "0000:18:00.0", Name: "NVIDIA H100 80GB HBM3",
		Serial: "1650123456789", VBIOS: "96.00.74.00.1A",
		UtilizationGPUPercent: gpu.F64(87), UtilizationMemoryPercent: gpu.F64(41),
		MemoryUsedBytes: gpu.U64(40 << 30), MemoryTotalBytes: gpu.U64(80 << 30),
		TemperatureCelsius: gpu.F64(91), PowerDrawWatts: gpu.F64(512.25), PowerLimitWatts: gpu.F64(700),
		SMClockMHz: gpu.F64(1410), MemoryClockMHz: gpu.F64(2619),
		ClockEventReasons: gpu.U64(gpu.ClockEventHwSlowdown | gpu.ClockEventHwThermal),
		ECCModeEnabled:    gpu.Bool(true),
		ECC:               gpu.ECCCounts{VolatileCorrected: gpu.U64(3), VolatileUncorrected: gpu.U64(0)},
		RemappedRows:      &gpu.RemappedRows{Correctable: 1, Uncorrectable: 2, Pending: true},
		PCIe: gpu.PCIe{ReplayCounter: gpu.U64(7), LinkGenCurrent: gpu.U64(5),
			LinkWidthCurrent: gpu.U64(8), LinkWidthMax: gpu.U64(16)},
		NVLink: []gpu.NVLink{
			{Link: 0, Active: true, CRCFlit: gpu.U64(0), CRCData: gpu.U64(0), Replay: gpu.U64(0), Recovery: gpu.U64(0)},
			{Link: 1, Active: false, CRCFlit: gpu.U64(12), CRCData: gpu.U64(1), Recovery: gpu.U64(2)},
		},
		XidTotals:       map[uint64]uint64{74: 1, 154: 1},
		RecoveryAction:  &ra,
		ResetRequired:   gpu.Bool(true),
		PersistenceMode: gpu.Bool(true), MIGEnabled: gpu.Bool(false),
		FabricState: "Completed", FabricStatus: "Success",
	}
}

// volta supports little: retired pages instead of remapped rows, no clock
// reasons, NVLink, recovery action or MIG; its temperature query timed out.
func volta() gpu.GPUSnapshot {
	return gpu.GPUSnapshot{
		Index: 1, UUID: "GPU-bbbb", PCIBusID: "0000:2a:00.0", Name: "Tesla V100-SXM2-32GB",
		PowerDrawWatts: gpu.F64(42),
		RetiredPages:   &gpu.RetiredPages{SingleBit: 2, DoubleBit: 1, Pending: true},
		Errors:         []gpu.QueryError{{Query: "GetTemperature", Message: "timed out", Timeout: true}},
	}
}

func twoGPUSnapshot() *gpu.NodeSnapshot {
	return &gpu.NodeSnapshot{
		Time: snapTime, Backend: "nvml",
		DriverVersion: "570.133.20", CUDADriverVersion: "12.8",
		KernelModuleVersion: "570.124.06", KernelRelease: "5.15.0-112-generic",
		ExpectedGPUs: 2, FoundGPUs: 2,
		DeviceNodes: []string{"/dev/nvidia0", "/dev/nvidia1", "/dev/nvidiactl"},
		NVSwitch:    true, FabricManager: "stopped",
		GPUs:   []gpu.GPUSnapshot{hopper(), volta()},
		Errors: []gpu.QueryError{{Query: "kernel-release", Message: "permission denied"}},
	}
}

// simSnapshot reads a healthy 8-GPU H100 sim node on a fixed clock, after
// applying faults.
func simSnapshot(t testing.TB, faults ...sim.Fault) *gpu.NodeSnapshot {
	t.Helper()
	return simSnapshotWith(t, sim.Options{GPUs: 8, Seed: 1}, faults...)
}

// simSnapshotWith is simSnapshot of a sim node with opts (its clock the
// fixed snapTime).
func simSnapshotWith(t testing.TB, opts sim.Options, faults ...sim.Fault) *gpu.NodeSnapshot {
	t.Helper()
	opts.Clock = clocktesting.NewFakeClock(snapTime)
	n, err := sim.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close() })
	for _, f := range faults {
		if err := n.Inject(f); err != nil {
			t.Fatal(err)
		}
	}
	s, err := n.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return s
}
