//go:build cgo

package nvml

import (
	"context"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	"github.com/google/go-cmp/cmp"

	"github.com/gpuheal/gpuheal/internal/gpu"
)

// deliver hands events to the reader and returns once it has recorded
// them: the reader takes the trailing barrier event only after it has
// finished with the ones before it.
func (f *fixture) deliver(evs ...nvml.EventData) {
	for _, e := range append(evs, nvml.EventData{Device: f.srv.Devices[0]}) {
		f.events <- e
	}
}

func TestXidEventsReachSnapshots(t *testing.T) {
	f := newH100(t)
	src := newSource(t, f.options())
	for i := range 8 {
		calls := f.dev(i).RegisterEventsCalls()
		if len(calls) != 1 || calls[0].V != wantedEvents {
			t.Fatalf("GPU %d RegisterEvents calls = %+v, want one with %#x", i, calls, uint64(wantedEvents))
		}
	}

	ev := func(i int, typ, data uint64) nvml.EventData {
		return nvml.EventData{Device: f.srv.Devices[i], EventType: typ, EventData: data}
	}
	f.deliver(
		ev(2, nvml.EventTypeXidCriticalError, 79),
		ev(1, nvml.EventTypeXidCriticalError, 48),
		ev(1, nvml.EventTypeDoubleBitEccError, 0), // the same fault again: deduplicated
		ev(5, nvml.EventTypeGpuRecoveryAction, 2),
		ev(6, nvml.EventTypeGpuUnavailableError, 0),
		ev(0, nvml.EventTypeSingleBitEccError, 0), // carries no Xid
	)
	snap, err := src.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	type xids struct {
		Events []gpu.XidEvent
		Totals map[uint64]uint64
	}
	got := map[int]xids{}
	for i, g := range snap.GPUs {
		if g.XidEvents != nil || g.XidTotals != nil {
			got[i] = xids{g.XidEvents, g.XidTotals}
		}
	}
	want := map[int]xids{
		1: {[]gpu.XidEvent{{Xid: 48, Time: t0}}, map[uint64]uint64{48: 1}},
		2: {[]gpu.XidEvent{{Xid: 79, Time: t0}}, map[uint64]uint64{79: 1}},
		5: {[]gpu.XidEvent{{Xid: 154, Time: t0, Data: 2}}, map[uint64]uint64{154: 1}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Xids (-want +got):\n%s", diff)
	}
	if errs := snap.GPUs[6].Errors; len(errs) != 1 || errs[0].Query != "EventSet.Wait" {
		t.Errorf("GPU 6 errors = %v, want the GPU-unavailable event", errs)
	}

	// Only new events are listed; totals keep running.
	f.clock.Step(time.Minute)
	stranger := dgxh100.NewDevice(9)
	f.deliver(ev(2, nvml.EventTypeXidCriticalError, 79), nvml.EventData{Device: stranger, EventType: nvml.EventTypeXidCriticalError, EventData: 13})
	snap, err = src.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]gpu.XidEvent{{Xid: 79, Time: t0.Add(time.Minute)}}, snap.GPUs[2].XidEvents); diff != "" {
		t.Errorf("GPU 2 new events (-want +got):\n%s", diff)
	}
	if got := snap.GPUs[2].XidTotals[79]; got != 2 {
		t.Errorf("GPU 2 Xid 79 total = %d, want 2", got)
	}
	if g := snap.GPUs[1]; g.XidEvents != nil || g.XidTotals[48] != 1 {
		t.Errorf("GPU 1 = %v / %v, want no new events and a total of 1", g.XidEvents, g.XidTotals)
	}
	if len(snap.GPUs[6].Errors) != 0 {
		t.Errorf("GPU 6 unavailable note repeated: %v", snap.GPUs[6].Errors)
	}
	if len(snap.Errors) != 1 || snap.Errors[0].Message != "event for a device that was not registered" {
		t.Errorf("node errors = %v, want the unregistered device", snap.Errors)
	}
}

func TestEventSetupFailures(t *testing.T) {
	f := newH100(t)
	f.srv.EventSetCreateFunc = func() (nvml.EventSet, nvml.Return) { return nil, nvml.ERROR_UNKNOWN }
	src := newSource(t, f.options())
	for range 2 {
		snap, err := src.Snapshot(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		want := []gpu.QueryError{{Query: "EventSetCreate", Message: "ERROR_UNKNOWN"}}
		if diff := cmp.Diff(want, snap.Errors); diff != "" {
			t.Errorf("node errors (-want +got):\n%s", diff)
		}
	}

	f = newH100(t)
	f.dev(1).RegisterEventsFunc = func(uint64, nvml.EventSet) nvml.Return { return nvml.ERROR_NO_PERMISSION }
	f.dev(2).GetSupportedEventTypesFunc = func() (uint64, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
	src = newSource(t, f.options())
	f.deliver(nvml.EventData{Device: f.srv.Devices[0], EventType: nvml.EventTypeXidCriticalError, EventData: 31})
	snap, err := src.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]gpu.QueryError{{Query: "RegisterEvents", Message: "ERROR_NO_PERMISSION"}}, snap.GPUs[1].Errors); diff != "" {
		t.Errorf("GPU 1 errors (-want +got):\n%s", diff)
	}
	if len(snap.GPUs[2].Errors) != 0 || len(snap.Errors) != 0 {
		t.Errorf("unsupported events reported as errors: %v %v", snap.GPUs[2].Errors, snap.Errors)
	}
	if got := snap.GPUs[0].XidTotals[31]; got != 1 {
		t.Errorf("GPU 0 Xid 31 total = %d, want 1: the other GPUs still get events", got)
	}
}
