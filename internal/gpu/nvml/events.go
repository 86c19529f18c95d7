//go:build cgo

package nvml

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"k8s.io/utils/clock"

	"github.com/gpuheal/gpuheal/internal/gpu"
)

// Event types asked for. Single-bit ECC events are left out on purpose:
// they carry no Xid, the corrected-error counters already report them,
// and a GPU in an SBE storm would wake the reader for every one.
const wantedEvents = nvml.EventTypeXidCriticalError | nvml.EventTypeDoubleBitEccError |
	nvml.EventTypeGpuUnavailableError | nvml.EventTypeGpuRecoveryAction

// Xids given to events that NVML delivers without one. The driver logs
// these Xids for the same faults, so NVML may also deliver them as Xid
// events; see dedupeWindow.
const (
	xidDoubleBitECC   = 48
	xidRecoveryAction = 154
)

// dedupeWindow joins an event NVML reports twice (as its own type and as
// an Xid) into one.
const dedupeWindow = time.Second

// maxPending bounds the events kept per GPU between snapshots; totals
// keep counting past it.
const maxPending = 256

// events drains an NVML event set in the background, because waiting on
// it blocks, and hands what arrived to the next snapshot.
type events struct {
	set    nvml.EventSet
	byDev  map[nvml.Device]int
	clock  clock.Clock
	wait   time.Duration
	stop   chan struct{}
	exited chan struct{}

	mu        sync.Mutex
	setupErrs []gpu.QueryError         // node-level, reported in every snapshot
	gpuErrs   map[int][]gpu.QueryError // registration failures, reported in every snapshot
	notes     map[int][]gpu.QueryError // one-off: GPU-unavailable events
	waitErrs  []gpu.QueryError         // one-off: failures of the wait itself
	pending   map[int][]gpu.XidEvent
	totals    map[int]map[uint64]uint64
	last      map[xidKey]seen
}

type xidKey struct {
	gpu int
	xid uint64
}

type seen struct {
	at          time.Time
	synthesized bool
}

// startEvents registers every GPU with a handle. It never fails New: a
// node without events still has counters, and the kernel log is the other
// Xid source. What went wrong is reported with each snapshot.
func startEvents(src *Source) *events {
	e := &events{
		byDev:   map[nvml.Device]int{},
		clock:   src.opts.Clock,
		wait:    src.opts.EventWait,
		stop:    make(chan struct{}),
		exited:  make(chan struct{}),
		gpuErrs: map[int][]gpu.QueryError{},
		notes:   map[int][]gpu.QueryError{},
		pending: map[int][]gpu.XidEvent{},
		totals:  map[int]map[uint64]uint64{},
		last:    map[xidKey]seen{},
	}
	s := src.nodeSession(context.Background())
	set, ok := get(s, "EventSetCreate", src.lib.EventSetCreate)
	if !ok {
		e.setupErrs = s.errs
		return e
	}
	e.set = set
	for i, d := range src.devices {
		if d.handle == nil {
			continue
		}
		ds := src.deviceSession(context.Background(), d)
		supported, ok := get(ds, "GetSupportedEventTypes", d.handle.GetSupportedEventTypes)
		if ok && supported&wantedEvents != 0 && do(ds, "RegisterEvents", func() nvml.Return {
			return d.handle.RegisterEvents(supported&wantedEvents, set)
		}) {
			e.byDev[d.handle] = i
		}
		if len(ds.errs) > 0 {
			e.gpuErrs[i] = ds.errs
		}
	}
	if len(e.byDev) == 0 {
		do(s, "EventSet.Free", set.Free)
		e.set = nil
		e.setupErrs = s.errs
		return e
	}
	go e.run()
	return e
}

func (e *events) run() {
	defer close(e.exited)
	for {
		select {
		case <-e.stop:
			return
		default:
		}
		data, ret, err := e.waitOnce()
		switch {
		case err == nil && ret == nvml.SUCCESS:
			e.record(data)
			continue
		case err == nil && ret == nvml.ERROR_TIMEOUT:
			continue
		case err == nil:
			err = ret
		}
		e.failWait(err)
		// Back off so a broken set does not spin a core.
		select {
		case <-e.stop:
			return
		case <-e.clock.After(e.wait):
		}
	}
}

func (e *events) waitOnce() (data nvml.EventData, ret nvml.Return, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	data, ret = e.set.Wait(uint32(e.wait.Milliseconds()))
	return data, ret, nil
}

func (e *events) failWait(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.waitFailedLocked(err.Error())
}

// waitFailedLocked keeps a few failures per snapshot: a broken set fails
// every wait, and one line says as much as a thousand.
func (e *events) waitFailedLocked(msg string) {
	if len(e.waitErrs) < 8 {
		e.waitErrs = append(e.waitErrs, gpu.QueryError{Query: "EventSet.Wait", Message: msg})
	}
}

// close stops the reader, waiting at most one event wait plus a margin;
// it frees the set only when the reader is out of the driver.
func (e *events) close(src *Source) error {
	if e.set == nil {
		return nil
	}
	close(e.stop)
	select {
	case <-e.exited:
	case <-e.clock.After(e.wait + src.opts.CallTimeout):
		return errors.New("closing NVML: the event reader is stuck in the driver; leaving NVML initialized")
	}
	s := src.nodeSession(context.Background())
	if !do(s, "EventSet.Free", e.set.Free) && len(s.errs) > 0 {
		return fmt.Errorf("freeing the NVML event set: %s", s.errs[0].Message)
	}
	return nil
}
