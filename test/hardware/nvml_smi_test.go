//go:build gpu

package hardware

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gpuheal/gpuheal/internal/gpu"
	"github.com/gpuheal/gpuheal/internal/gpu/nvml"
	"github.com/gpuheal/gpuheal/internal/gpu/smi"
)

func TestNVMLAndSMIAgree(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	nv, err := nvml.New(nvml.Options{})
	if err != nil {
		t.Fatalf("nvml: %v", err)
	}
	defer nv.Close()
	a, err := nv.Snapshot(ctx)
	if err != nil {
		t.Fatalf("nvml snapshot: %v", err)
	}
	b, err := smi.New(smi.Options{}).Snapshot(ctx)
	if err != nil {
		t.Fatalf("smi snapshot: %v", err)
	}
	save(t, "nvml.json", a)
	save(t, "smi.json", b)

	if a.DriverVersion != b.DriverVersion {
		t.Errorf("driver: nvml %q, smi %q", a.DriverVersion, b.DriverVersion)
	}
	if a.CUDADriverVersion != b.CUDADriverVersion {
		t.Errorf("cuda: nvml %q, smi %q", a.CUDADriverVersion, b.CUDADriverVersion)
	}
	if len(a.GPUs) != len(b.GPUs) {
		t.Fatalf("GPU count: nvml %d, smi %d", len(a.GPUs), len(b.GPUs))
	}
	for i := range a.GPUs {
		x, y := a.GPUs[i], b.GPUs[i]
		for _, f := range []struct{ name, nv, smi string }{
			{"uuid", x.UUID, y.UUID}, {"pci", x.PCIBusID, y.PCIBusID}, {"name", x.Name, y.Name},
			{"serial", x.Serial, y.Serial}, {"vbios", x.VBIOS, y.VBIOS},
			{"fabric state", x.FabricState, y.FabricState}, {"fabric status", x.FabricStatus, y.FabricStatus},
		} {
			if f.nv != f.smi {
				t.Errorf("gpu %d %s: nvml %q, smi %q", i, f.name, f.nv, f.smi)
			}
		}
		sameU64(t, i, "memory total", x.MemoryTotalBytes, y.MemoryTotalBytes)
		sameU64(t, i, "ecc aggregate uncorrected", x.ECC.AggregateUncorrected, y.ECC.AggregateUncorrected)
		sameU64(t, i, "pcie gen max", x.PCIe.LinkGenMax, y.PCIe.LinkGenMax)
		sameU64(t, i, "pcie width max", x.PCIe.LinkWidthMax, y.PCIe.LinkWidthMax)
		if (x.RemappedRows == nil) != (y.RemappedRows == nil) {
			t.Errorf("gpu %d remapped rows: nvml %v, smi %v", i, x.RemappedRows, y.RemappedRows)
		}
		if len(x.MIGDevices) != len(y.MIGDevices) {
			t.Errorf("gpu %d MIG devices: nvml %d, smi %d", i, len(x.MIGDevices), len(y.MIGDevices))
		}
		if (x.RecoveryAction == nil) != (y.RecoveryAction == nil) {
			t.Errorf("gpu %d recovery action supported: nvml %v, smi %v", i, x.RecoveryAction, y.RecoveryAction)
		}
	}
}

func sameU64(t *testing.T, gpuIndex int, what string, a, b *uint64) {
	t.Helper()
	switch {
	case a == nil && b == nil:
	case a == nil || b == nil:
		t.Errorf("gpu %d %s: nvml %v, smi %v (one backend reports it unsupported)", gpuIndex, what, a, b)
	case *a != *b:
		t.Errorf("gpu %d %s: nvml %d, smi %d", gpuIndex, what, *a, *b)
	}
}

// save writes a snapshot under $OUT (the device machine's result folder)
// or the test's temp dir, for docs/hardware-validation.md.
func save(t *testing.T, name string, s *gpu.NodeSnapshot) {
	dir := os.Getenv("OUT")
	if dir == "" {
		dir = t.TempDir()
	}
	b, _ := json.MarshalIndent(s, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
		t.Error(err)
	}
}
