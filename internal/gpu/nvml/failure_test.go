//go:build cgo

package nvml

import (
	"context"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/gpuheal/gpuheal/internal/gpu"
)

func TestErrorsBecomeQueryErrors(t *testing.T) {
	f := newH100(t)
	d := f.dev(3)
	d.GetRemappedRowsFunc = func() (int, int, bool, bool, nvml.Return) { return 0, 0, false, false, nvml.ERROR_UNKNOWN }
	d.GetPowerUsageFunc = nil // the mock panics "method is nil"
	d.GetNvLinkErrorCounterFunc = func(l int, c nvml.NvLinkErrorCounter) (uint64, nvml.Return) {
		if l == 4 && c == nvml.NVLINK_ERROR_DL_CRC_FLIT {
			return 0, nvml.ERROR_NO_PERMISSION
		}
		return nvlinkValue(3, l, c), nvml.SUCCESS
	}

	snap, err := newSource(t, f.options()).Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	g := snap.GPUs[3]
	want := f.want(3)
	want.RemappedRows = nil
	want.PowerDrawWatts = nil
	want.NVLink[4].CRCFlit = nil
	want.Errors = []gpu.QueryError{
		{Query: "GetRemappedRows", Message: "ERROR_UNKNOWN"},
		{Query: "GetPowerUsage", Message: "panic: Device.GetPowerUsageFunc: method is nil but Device.GetPowerUsage was just called"},
		{Query: "GetNvLinkErrorCounter(4, DL_CRC_FLIT)", Message: "ERROR_NO_PERMISSION"},
	}
	if diff := cmp.Diff(want, g, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("GPU 3 (-want +got):\n%s", diff)
	}
	for i, g := range snap.GPUs {
		if i != 3 && len(g.Errors) != 0 {
			t.Errorf("GPU %d errors: %v", i, g.Errors)
		}
	}
}

func TestLostGPUIsMissing(t *testing.T) {
	f := newH100(t)
	lost := false
	f.dev(4).GetTotalEccErrorsFunc = func(nvml.MemoryErrorType, nvml.EccCounterType) (uint64, nvml.Return) {
		if lost {
			return 0, nvml.ERROR_GPU_IS_LOST
		}
		return 1, nvml.SUCCESS
	}
	src := newSource(t, f.options())
	if _, err := src.Snapshot(context.Background()); err != nil {
		t.Fatal(err)
	}
	lost = true
	snap, err := src.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	g := snap.GPUs[4]
	if !g.Missing || snap.FoundGPUs != 7 {
		t.Fatalf("Missing = %v, FoundGPUs = %d; want true, 7", g.Missing, snap.FoundGPUs)
	}
	// Identity from the earlier snapshot still names the GPU; the reads
	// after the lost call are skipped.
	if g.UUID != f.dev(4).UUID || g.PCIBusID != "0000:58:00.0" {
		t.Errorf("identity = %q %q", g.UUID, g.PCIBusID)
	}
	if g.TemperatureCelsius != nil || g.NVLink != nil || len(g.Errors) != 1 || g.Errors[0].Message != "ERROR_GPU_IS_LOST" {
		t.Errorf("after the lost call: temperature %v, nvlink %v, errors %v", g.TemperatureCelsius, g.NVLink, g.Errors)
	}
	if got := len(f.dev(4).GetTotalEccErrorsCalls()); got != 4+1 {
		t.Errorf("GetTotalEccErrors calls = %d, want 5 (stop at the first lost answer)", got)
	}
}

func TestHandleLostAtStart(t *testing.T) {
	f := newH100(t)
	f.srv.DeviceGetHandleByIndexFunc = func(i int) (nvml.Device, nvml.Return) {
		if i == 6 {
			return nil, nvml.ERROR_GPU_IS_LOST
		}
		return f.srv.Devices[i], nvml.SUCCESS
	}
	snap, err := newSource(t, Options{Lib: f.srv, Clock: f.clock, ExpectedGPUs: 8}).Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if g := snap.GPUs[6]; !g.Missing || g.Index != 6 || len(g.Errors) != 1 || g.Errors[0].Query != "DeviceGetHandleByIndex" {
		t.Errorf("GPU 6 = %+v; want Missing with a DeviceGetHandleByIndex error", g)
	}
	if snap.ExpectedGPUs != 8 || snap.FoundGPUs != 7 {
		t.Errorf("expected/found = %d/%d, want 8/7", snap.ExpectedGPUs, snap.FoundGPUs)
	}
}

func TestNoGPUFound(t *testing.T) {
	tests := []struct {
		name  string
		setup func(*fixture)
		want  string
	}{
		{
			name:  "library not found",
			setup: func(f *fixture) { f.srv.InitFunc = func() nvml.Return { return nvml.ERROR_LIBRARY_NOT_FOUND } },
			want:  "ERROR_LIBRARY_NOT_FOUND",
		},
		{
			name:  "driver not loaded",
			setup: func(f *fixture) { f.srv.InitFunc = func() nvml.Return { return nvml.ERROR_DRIVER_NOT_LOADED } },
			want:  "ERROR_DRIVER_NOT_LOADED",
		},
		{
			name:  "init panics",
			setup: func(f *fixture) { f.srv.InitFunc = nil },
			want:  "panic",
		},
		{
			name: "count fails",
			setup: func(f *fixture) {
				f.srv.DeviceGetCountFunc = func() (int, nvml.Return) { return 0, nvml.ERROR_UNKNOWN }
			},
			want: "counting GPUs",
		},
		{
			name:  "no GPUs",
			setup: func(f *fixture) { f.srv.Devices = nil },
			want:  "NVML sees no GPU",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newH100(t)
			tt.setup(f)
			src, err := New(f.options())
			if err == nil {
				_ = src.Close()
				t.Fatal("New succeeded")
			}
			if !strings.HasPrefix(err.Error(), "no NVIDIA GPU found: ") || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q, want prefix %q and %q", err, "no NVIDIA GPU found: ", tt.want)
			}
		})
	}
}

func TestNoGPUsWhenSomeExpected(t *testing.T) {
	f := newH100(t)
	f.srv.Devices = nil
	opts := f.options()
	opts.ExpectedGPUs = 8
	snap, err := newSource(t, opts).Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if snap.ExpectedGPUs != 8 || snap.FoundGPUs != 0 || len(snap.GPUs) != 0 {
		t.Errorf("expected/found/len = %d/%d/%d, want 8/0/0", snap.ExpectedGPUs, snap.FoundGPUs, len(snap.GPUs))
	}
}

func TestClose(t *testing.T) {
	f := newH100(t)
	src, err := New(f.options())
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-f.freed:
	default:
		t.Error("event set not freed")
	}
	if n := len(f.srv.ShutdownCalls()); n != 1 {
		t.Errorf("Shutdown calls = %d, want 1", n)
	}
	if err := src.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := src.Snapshot(context.Background()); err == nil {
		t.Error("Snapshot after Close succeeded")
	}
}
