package sim

import (
	"bytes"
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuheal/gpuheal/internal/gpu"
)

func TestNewRejectsBadOptions(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{"too many GPUs", Options{GPUs: 9}, "sim: GPUs 9 out of range 1–8"},
		{"negative GPUs", Options{GPUs: -1}, "sim: GPUs -1 out of range 1–8"},
		{"unknown model", Options{Model: "B300"}, `sim: unknown model "B300" (known: A100-SXM4-80GB, H100-80GB-HBM3, H200, V100-SXM2-32GB)`},
		{"bad driver", Options{DriverVersion: "latest"}, `sim: driver version "latest": want a form like 570.133.20`},
		{"negative uptime", Options{Uptime: -time.Second}, "sim: uptime -1s is negative"},
		{"negative log size", Options{KernelLogSize: -1}, "sim: kernel log size -1 is negative"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.opts)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("New error = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestDefaultSnapshot(t *testing.T) {
	n, _ := newTestNode(t, Options{NodeName: "gpu-node-1", Seed: 7})
	s := snapshot(t, n)
	if n.Name() != "sim" || s.Backend != "sim" {
		t.Errorf("backend = %q/%q, want sim", n.Name(), s.Backend)
	}
	facts := []string{s.DriverVersion, s.CUDADriverVersion, s.KernelModuleVersion, s.KernelRelease, s.FabricManager}
	if diff := cmp.Diff([]string{"570.133.20", "12.8", "570.133.20", "5.15.0-112-generic", "running"}, facts); diff != "" {
		t.Errorf("node facts (-want +got):\n%s", diff)
	}
	if s.ExpectedGPUs != 8 || s.FoundGPUs != 8 || !s.NVSwitch || !s.Time.Equal(t0) {
		t.Errorf("expected/found/nvswitch/time = %d/%d/%v/%v", s.ExpectedGPUs, s.FoundGPUs, s.NVSwitch, s.Time)
	}
	wantDev := []string{"/dev/nvidia0", "/dev/nvidia1", "/dev/nvidia2", "/dev/nvidia3", "/dev/nvidia4",
		"/dev/nvidia5", "/dev/nvidia6", "/dev/nvidia7", "/dev/nvidiactl", "/dev/nvidia-uvm"}
	if diff := cmp.Diff(wantDev, s.DeviceNodes); diff != "" {
		t.Errorf("device nodes (-want +got):\n%s", diff)
	}
	uuidRE := regexp.MustCompile(`^GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	seen := map[string]bool{}
	var buses []string
	for i, g := range s.GPUs {
		buses = append(buses, g.PCIBusID)
		if g.Index != i || *g.MinorNum != uint64(i) || g.Name != "NVIDIA H100 80GB HBM3" || g.Missing {
			t.Errorf("gpu %d: index/minor/name/missing = %d/%d/%q/%v", i, g.Index, *g.MinorNum, g.Name, g.Missing)
		}
		if !uuidRE.MatchString(g.UUID) || seen[g.UUID] {
			t.Errorf("gpu %d: UUID %q malformed or repeated", i, g.UUID)
		}
		seen[g.UUID] = true
		if temp := *g.TemperatureCelsius; temp < 35 || temp > 45 {
			t.Errorf("gpu %d: temperature %v outside 35–45", i, temp)
		}
		if p := *g.PowerDrawWatts; p < 60 || p > 80 || *g.PowerLimitWatts != 700 {
			t.Errorf("gpu %d: power %v of %v W", i, p, *g.PowerLimitWatts)
		}
		if *g.ClockEventReasons != gpu.ClockEventGPUIdle || *g.MemoryTotalBytes != 81559<<20 {
			t.Errorf("gpu %d: clock reasons %#x, memory %d", i, *g.ClockEventReasons, *g.MemoryTotalBytes)
		}
		pcie := []uint64{*g.PCIe.LinkGenCurrent, *g.PCIe.LinkGenMax, *g.PCIe.LinkWidthCurrent, *g.PCIe.LinkWidthMax, *g.PCIe.ReplayCounter}
		if diff := cmp.Diff([]uint64{5, 5, 16, 16, 0}, pcie); diff != "" {
			t.Errorf("gpu %d: pcie (-want +got):\n%s", i, diff)
		}
		if len(g.NVLink) != 18 || !g.NVLink[17].Active {
			t.Errorf("gpu %d: %d NVLinks, want 18 active", i, len(g.NVLink))
		}
		if diff := cmp.Diff(&gpu.RemappedRows{}, g.RemappedRows); diff != "" || g.RetiredPages != nil {
			t.Errorf("gpu %d: remapped rows %v, retired pages %v", i, g.RemappedRows, g.RetiredPages)
		}
		if *g.RecoveryAction != gpu.RecoveryNone || *g.ResetRequired || g.FabricState != "Completed" {
			t.Errorf("gpu %d: recovery %v reset %v fabric %q", i, *g.RecoveryAction, *g.ResetRequired, g.FabricState)
		}
		if *g.ECC.AggregateUncorrected != 0 || len(g.XidEvents) != 0 || g.XidTotals != nil {
			t.Errorf("gpu %d: not clean: ecc %d xids %v %v", i, *g.ECC.AggregateUncorrected, g.XidEvents, g.XidTotals)
		}
	}
	if diff := cmp.Diff(hgxBusIDs, buses); diff != "" {
		t.Errorf("bus ids (-want +got):\n%s", diff)
	}
}

func TestModels(t *testing.T) {
	tests := []struct {
		opts                        Options
		name                        string
		links                       int
		gen                         uint64
		nvswitch, remap, recovery   bool
		fabricManager, fabricStatus string
	}{
		{Options{Model: "A100"}, "NVIDIA A100-SXM4-80GB", 12, 4, true, true, true, "running", ""},
		{Options{Model: "h200"}, "NVIDIA H200", 18, 5, true, true, true, "running", "Success"},
		{Options{Model: "V100-SXM2-32GB"}, "Tesla V100-SXM2-32GB", 6, 3, false, false, false, "", ""},
		{Options{GPUs: 4}, "NVIDIA H100 80GB HBM3", 18, 5, false, true, true, "", ""},
		{Options{GPUs: 4, NVSwitch: gpu.Bool(true)}, "NVIDIA H100 80GB HBM3", 18, 5, true, true, true, "running", "Success"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n, _ := newTestNode(t, tc.opts)
			s := snapshot(t, n)
			g := s.GPUs[0]
			if g.Name != tc.name || len(g.NVLink) != tc.links || *g.PCIe.LinkGenMax != tc.gen {
				t.Errorf("name/links/gen = %q/%d/%d", g.Name, len(g.NVLink), *g.PCIe.LinkGenMax)
			}
			if s.NVSwitch != tc.nvswitch || s.FabricManager != tc.fabricManager || g.FabricStatus != tc.fabricStatus {
				t.Errorf("nvswitch/fm/fabric = %v/%q/%q", s.NVSwitch, s.FabricManager, g.FabricStatus)
			}
			if (g.RemappedRows != nil) != tc.remap || (g.RetiredPages != nil) == tc.remap {
				t.Errorf("remapped rows %v, retired pages %v", g.RemappedRows, g.RetiredPages)
			}
			if (g.RecoveryAction != nil) != tc.recovery {
				t.Errorf("recovery action %v", g.RecoveryAction)
			}
			if s.ExpectedGPUs != len(s.GPUs) || len(s.DeviceNodes) != len(s.GPUs)+2 {
				t.Errorf("expected %d, %d GPUs, %d device nodes", s.ExpectedGPUs, len(s.GPUs), len(s.DeviceNodes))
			}
		})
	}
}

// TestDeterminism is the contract the benchmarks and demo rely on: same
// seed, clock times and faults give the same bytes; seed and name matter.
func TestDeterminism(t *testing.T) {
	faults := []Fault{
		{Kind: KindSBE, GPU: 1, Params: map[string]string{"count": "3"}},
		{Kind: KindXid, GPU: 2, Params: map[string]string{"code": "13"}},
		{Kind: KindThermalSlowdown, GPU: 3},
		{Kind: KindFellOffBus, GPU: 4},
		{Kind: KindPCIeReplay, GPU: 5, Params: map[string]string{"count": "7"}},
	}
	run := func(opts Options) (snaps [][]byte, log string) {
		n, clk := newTestNode(t, opts)
		for _, f := range faults {
			clk.Step(1700 * time.Millisecond)
			if err := n.Inject(f); err != nil {
				t.Fatal(err)
			}
			snaps = append(snaps, snapshotJSON(t, n))
		}
		clk.Step(time.Hour)
		return append(snaps, snapshotJSON(t, n)), FormatRaw(n.KernelLog(0))
	}
	opts := Options{NodeName: "node-a", Seed: 42}
	a, logA := run(opts)
	b, logB := run(opts)
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			t.Fatalf("snapshot %d differs:\n%s\n%s", i, a[i], b[i])
		}
	}
	if logA != logB {
		t.Fatalf("kernel logs differ:\n%s\n%s", logA, logB)
	}
	uuid := func(o Options) string { n, _ := newTestNode(t, o); return snapshot(t, n).GPUs[0].UUID }
	base := uuid(opts)
	if uuid(Options{NodeName: "node-a", Seed: 43}) == base || uuid(Options{NodeName: "node-b", Seed: 42}) == base {
		t.Error("UUID does not depend on both seed and node name")
	}
}

// Readings drift with time but stay in the idle band.
func TestReadingsOverTime(t *testing.T) {
	n, clk := newTestNode(t, Options{Seed: 3})
	temps := map[float64]bool{}
	for range 200 {
		clk.Step(time.Second)
		for _, g := range snapshot(t, n).GPUs {
			temp := *g.TemperatureCelsius
			if temp < 35 || temp > 45 {
				t.Fatalf("temperature %v outside 35–45", temp)
			}
			temps[temp] = true
		}
	}
	if len(temps) < 3 {
		t.Errorf("temperatures never vary: %v", temps)
	}
}

func TestXidEventsDeliveredOnce(t *testing.T) {
	n, _ := newTestNode(t, Options{})
	for range 2 {
		if err := n.Inject(Fault{Kind: KindXid, GPU: 0, Params: map[string]string{"code": "31", "data": "5"}}); err != nil {
			t.Fatal(err)
		}
	}
	g := snapshot(t, n).GPUs[0]
	want := []gpu.XidEvent{{Xid: 31, Time: t0, Data: 5}, {Xid: 31, Time: t0, Data: 5}}
	if diff := cmp.Diff(want, g.XidEvents); diff != "" {
		t.Errorf("first snapshot events (-want +got):\n%s", diff)
	}
	g = snapshot(t, n).GPUs[0]
	if len(g.XidEvents) != 0 || g.XidTotals[31] != 2 {
		t.Errorf("second snapshot: events %v, totals %v", g.XidEvents, g.XidTotals)
	}
}

func TestClosedAndCancelled(t *testing.T) {
	n, _ := newTestNode(t, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := n.Snapshot(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Snapshot with cancelled ctx = %v", err)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Snapshot(context.Background()); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Snapshot after Close = %v", err)
	}
	if err := n.Inject(Fault{Kind: KindPowerBrake}); err == nil {
		t.Error("Inject after Close succeeded")
	}
}

// Snapshots, injections and log reads may come from different goroutines
// (collect loop, demo driver, kmsg reader); run with -race.
func TestConcurrentUse(t *testing.T) {
	n, clk := newTestNode(t, Options{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 50 {
			if err := n.Inject(Fault{Kind: KindSBE, GPU: i % 8}); err != nil {
				t.Error(err)
				return
			}
			n.KernelLog(0)
		}
	}()
	for range 50 {
		clk.Step(time.Second)
		snapshot(t, n)
	}
	<-done
	var total uint64
	for _, g := range snapshot(t, n).GPUs {
		total += *g.ECC.AggregateCorrected
	}
	if total != 50 {
		t.Errorf("corrected errors = %d, want 50", total)
	}
}
