//go:build cgo

package nvml

import (
	"maps"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuheal/gpuheal/internal/gpu"
)

func (e *events) record(data nvml.EventData) {
	now := e.clock.Now()
	idx, ok := e.lookup(data.Device)
	e.mu.Lock()
	defer e.mu.Unlock()
	if !ok {
		e.waitFailedLocked("event for a device that was not registered")
		return
	}
	var ev gpu.XidEvent
	synthesized := true
	switch {
	case data.EventType&nvml.EventTypeXidCriticalError != 0:
		ev, synthesized = gpu.XidEvent{Xid: data.EventData}, false
	case data.EventType&nvml.EventTypeDoubleBitEccError != 0:
		ev = gpu.XidEvent{Xid: xidDoubleBitECC}
	case data.EventType&nvml.EventTypeGpuRecoveryAction != 0:
		ev = gpu.XidEvent{Xid: xidRecoveryAction, Data: data.EventData}
	case data.EventType&nvml.EventTypeGpuUnavailableError != 0:
		// No Xid is documented for it; say what NVML said and let the
		// next read find the GPU lost.
		e.notes[idx] = append(e.notes[idx], gpu.QueryError{
			Query:   "EventSet.Wait",
			Message: "NVML reported the GPU unavailable (GpuUnavailableError event)",
		})
		return
	default:
		return
	}
	ev.Time = now
	key := xidKey{idx, ev.Xid}
	if prev, ok := e.last[key]; ok && prev.synthesized != synthesized && now.Sub(prev.at) < dedupeWindow {
		return
	}
	e.last[key] = seen{at: now, synthesized: synthesized}
	if e.totals[idx] == nil {
		e.totals[idx] = map[uint64]uint64{}
	}
	e.totals[idx][ev.Xid]++
	if len(e.pending[idx]) < maxPending {
		e.pending[idx] = append(e.pending[idx], ev)
	}
}

// lookup maps the event's handle to a GPU index. Handles from NVML are
// comparable values; a handle type that is not would panic in the map.
func (e *events) lookup(d nvml.Device) (idx int, ok bool) {
	defer func() {
		if recover() != nil {
			idx, ok = 0, false
		}
	}()
	idx, ok = e.byDev[d]
	return idx, ok
}

// drain moves what arrived since the last snapshot into snap.
func (e *events) drain(snap *gpu.NodeSnapshot) {
	e.mu.Lock()
	defer e.mu.Unlock()
	snap.Errors = append(snap.Errors, e.setupErrs...)
	snap.Errors = append(snap.Errors, e.waitErrs...)
	e.waitErrs = nil
	for i := range snap.GPUs {
		g := &snap.GPUs[i]
		g.Errors = append(g.Errors, e.gpuErrs[i]...)
		g.Errors = append(g.Errors, e.notes[i]...)
		g.XidEvents = e.pending[i]
		if t := e.totals[i]; t != nil {
			g.XidTotals = maps.Clone(t)
		}
	}
	clear(e.notes)
	clear(e.pending)
	for k, v := range e.last {
		if snap.Time.Sub(v.at) > dedupeWindow {
			delete(e.last, k)
		}
	}
}
