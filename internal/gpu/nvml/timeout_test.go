//go:build cgo

package nvml

import (
	"context"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	testclock "k8s.io/utils/clock/testing"

	"github.com/gpuheal/gpuheal/internal/gpu"
)

func TestBlockedGPUDoesNotStallOthers(t *testing.T) {
	const callTimeout = 200 * time.Millisecond
	f := newH100(t)
	release := make(chan struct{})
	f.dev(3).GetRemappedRowsFunc = func() (int, int, bool, bool, nvml.Return) {
		<-release
		return 3, 1, false, false, nvml.SUCCESS
	}
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	// The real clock: the point is that Snapshot returns in real time.
	src := newSource(t, Options{Lib: f.srv, CallTimeout: callTimeout, EventWait: 5 * time.Millisecond})

	snapshot := func() *gpu.NodeSnapshot {
		t.Helper()
		start := time.Now()
		snap, err := src.Snapshot(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		// Generous for a loaded CI machine; without time-boxing this
		// would never return.
		if d := time.Since(start); d > 15*callTimeout {
			t.Errorf("Snapshot took %v with a %v call timeout", d, callTimeout)
		}
		return snap
	}
	healthy := func(snap *gpu.NodeSnapshot) {
		t.Helper()
		for i, g := range snap.GPUs {
			if i == 3 {
				continue
			}
			if diff := cmp.Diff(f.want(i), g, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("GPU %d (-want +got):\n%s", i, diff)
			}
		}
	}

	snap := snapshot()
	healthy(snap)
	g := snap.GPUs[3]
	wantErr := []gpu.QueryError{{Query: "GetRemappedRows", Message: "no answer within 200ms", Timeout: true}}
	if diff := cmp.Diff(wantErr, g.Errors); diff != "" {
		t.Errorf("GPU 3 errors (-want +got):\n%s", diff)
	}
	if g.UUID != f.dev(3).UUID || g.ECC.VolatileCorrected == nil || g.RemappedRows != nil || g.TemperatureCelsius != nil {
		t.Errorf("GPU 3 should keep what it read before the hang and nothing after: %+v", g)
	}
	if g.Missing {
		t.Error("a hung GPU is not a missing one")
	}

	// Still hung: GPU 3 is reported but not asked again.
	snap = snapshot()
	healthy(snap)
	g = snap.GPUs[3]
	if diff := cmp.Diff([]gpu.QueryError{skipped("GetRemappedRows")}, g.Errors); diff != "" {
		t.Errorf("GPU 3 errors while hung (-want +got):\n%s", diff)
	}
	if g.UUID != f.dev(3).UUID || g.PCIBusID != "0000:48:00.0" {
		t.Errorf("GPU 3 identity lost while hung: %q %q", g.UUID, g.PCIBusID)
	}
	if n := len(f.dev(3).GetRemappedRowsCalls()); n != 1 {
		t.Errorf("GetRemappedRows called %d times while hung, want 1", n)
	}
	if n := len(f.dev(3).GetEccModeCalls()); n != 1 {
		t.Errorf("GetEccMode called %d times, want 1: a hung GPU must not be queried", n)
	}

	close(release)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, stuck := src.devices[3].guard.stuck(); !stuck {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("GPU 3 still marked hung after its call returned")
		}
		<-time.After(5 * time.Millisecond)
	}
	snap = snapshot()
	healthy(snap)
	if diff := cmp.Diff(f.want(3), snap.GPUs[3], cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("GPU 3 after recovery (-want +got):\n%s", diff)
	}
}

func TestReadBudget(t *testing.T) {
	c := testclock.NewFakeClock(t0)
	s := newSession(context.Background(), c, time.Minute, 100*time.Millisecond, &guard{})
	calls := 0
	fn := func() (int, nvml.Return) { calls++; return 1, nvml.SUCCESS }
	if _, ok := get(s, "first", fn); !ok {
		t.Fatalf("first call failed: %v", s.errs)
	}
	c.Step(150 * time.Millisecond)
	if _, ok := get(s, "second", fn); ok {
		t.Error("call past the read budget succeeded")
	}
	if _, ok := get(s, "third", fn); ok {
		t.Error("call after the budget ran out succeeded")
	}
	want := []gpu.QueryError{{Query: "second", Message: "read budget used up before this call", Timeout: true}}
	if diff := cmp.Diff(want, s.errs); diff != "" || calls != 1 {
		t.Errorf("calls = %d, errors (-want +got):\n%s", calls, diff)
	}
}

func TestCanceledContext(t *testing.T) {
	f := newH100(t)
	src := newSource(t, f.options())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := src.Snapshot(ctx); err == nil {
		t.Error("Snapshot with a canceled context succeeded")
	}
}
