//go:build cgo

package nvml

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuheal/gpuheal/internal/gpu"
)

// An R470 library has neither the R535 clock-reasons call nor the fabric
// call; calling either would end the process, so they must not be called
// at all (on a mock, an uncalled function is what proves it).
func TestOldDriverSymbolsAreNotCalled(t *testing.T) {
	f := newH100(t)
	f.srv.LookupSymbolFunc = func(name string) error {
		if name == symClocksEventReasons || name == symFabricInfo {
			return errors.New("undefined symbol: " + name)
		}
		return nil
	}
	for i := range f.srv.Devices {
		f.dev(i).GetCurrentClocksThrottleReasonsFunc = func() (uint64, nvml.Return) {
			return gpu.ClockEventHwSlowdown, nvml.SUCCESS
		}
	}
	snap, err := newSource(t, f.options()).Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for i, g := range snap.GPUs {
		d := f.dev(i)
		if n := len(d.GetCurrentClocksEventReasonsCalls()); n != 0 {
			t.Errorf("GPU %d: %s called %d times", i, symClocksEventReasons, n)
		}
		if n := len(d.GetGpuFabricInfoCalls()); n != 0 {
			t.Errorf("GPU %d: %s called %d times", i, symFabricInfo, n)
		}
		if g.ClockEventReasons == nil || *g.ClockEventReasons != gpu.ClockEventHwSlowdown {
			t.Errorf("GPU %d: ClockEventReasons = %v, want HwSlowdown from the pre-R535 call", i, g.ClockEventReasons)
		}
		if g.FabricState != "" || g.FabricStatus != "" || len(g.Errors) != 0 {
			t.Errorf("GPU %d: fabric %q/%q, errors %v; want unknown and no errors", i, g.FabricState, g.FabricStatus, g.Errors)
		}
	}
}

// A mock that cannot look symbols up is taken to have them all.
func TestSymbolsOfALibraryWithoutExtensions(t *testing.T) {
	f := newH100(t)
	f.srv.ExtensionsFunc = nil // the mock panics when asked
	if got := lookupSymbols(f.srv); !got.clocksEventReasons || !got.fabricInfo {
		t.Errorf("lookupSymbols = %+v, want every symbol present", got)
	}
}

// A driver root without the library fails New before anything is loaded,
// naming the root, as "no GPU" (the agent exits 3, or falls back to smi).
func TestNewWithEmptyDriverRoot(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(root+"/usr/lib64", 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := New(Options{DriverRoot: root})
	if err == nil || !strings.HasPrefix(err.Error(), "no NVIDIA GPU found: ") || !strings.Contains(err.Error(), root) {
		t.Fatalf("New = %v; want a no-GPU error naming %s", err, root)
	}
}
