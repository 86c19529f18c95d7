package trace

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/gpuheal/gpuheal/internal/predict"
)

// Encoder builds one GPU file in memory (a 30-day file is a few hundred
// KiB). Samples must come in time order on the interval grid.
type Encoder struct {
	h     Header
	body  []byte
	prev  predict.Sample
	prevG [predict.NumGauges]int64
	next  time.Time // time the next sample is expected at
	run   uint64    // pending repeats of prev
}

// NewEncoder starts a file for GPU gpu whose first sample is at start;
// start and interval are whole seconds.
func NewEncoder(gpu int, start time.Time, interval time.Duration) *Encoder {
	e := &Encoder{h: Header{GPU: gpu, Start: start.Truncate(time.Second), Interval: interval}, next: start}
	for i := range e.prevG {
		e.prevG[i] = unreported
		e.prev.Gauges[i] = predict.NaN
	}
	return e
}

// Add appends one sample. Its time must be on the grid at or after the
// expected time; a later one is stored as a skip.
func (e *Encoder) Add(s *predict.Sample) error {
	if d := s.Time.Sub(e.next); d < 0 || d%e.h.Interval != 0 {
		return fmt.Errorf("sample %d at %s: not on the %s grid after %s", e.h.Samples, s.Time.Format(time.RFC3339), e.h.Interval, e.next.Format(time.RFC3339))
	}
	skip := uint64(s.Time.Sub(e.next) / e.h.Interval)
	var g [predict.NumGauges]int64
	var mask uint64
	for i, v := range s.Gauges {
		if g[i] = gaugeValue(v); g[i] != e.prevG[i] {
			mask |= 1 << i
		}
	}
	if len(s.Xids) > 0 {
		mask |= 1 << bitXids
	}
	p := &e.prev
	if flagsOf(s) != flagsOf(p) {
		mask |= 1 << bitFlags
	}
	if s.ClockEventReasons != p.ClockEventReasons {
		mask |= 1 << bitClock
	}
	if s.PCIeLinkGen != p.PCIeLinkGen || s.PCIeLinkGenMax != p.PCIeLinkGenMax ||
		s.PCIeLinkWidth != p.PCIeLinkWidth || s.PCIeLinkWidthMax != p.PCIeLinkWidthMax {
		mask |= 1 << bitPCIe
	}
	if s.NVLinkUp != p.NVLinkUp || s.NVLinkTotal != p.NVLinkTotal {
		mask |= 1 << bitNVLink
	}
	if s.RecoveryAction != p.RecoveryAction {
		mask |= 1 << bitRecovery
	}
	if s.CountersRead != p.CountersRead {
		mask |= 1 << bitRead
	}
	if skip > 0 {
		mask |= 1 << bitSkip
	}
	for i, v := range s.Counters {
		if v != p.Counters[i] {
			mask |= 1 << (bitCounter0 + i)
		}
	}
	e.h.Samples++
	e.next = s.Time.Add(e.h.Interval)
	if mask == 0 {
		e.run++
		return nil
	}
	e.flushRun()
	e.body = binary.AppendUvarint(e.body, mask)
	for i := range g {
		if mask&(1<<i) != 0 {
			e.body = binary.AppendUvarint(e.body, zigzag(g[i]-e.prevG[i]))
		}
	}
	if mask&(1<<bitXids) != 0 {
		e.body = binary.AppendUvarint(e.body, uint64(len(s.Xids)))
		for _, x := range s.Xids {
			e.body = binary.AppendUvarint(e.body, uint64(x))
		}
	}
	if mask&(1<<bitFlags) != 0 {
		e.body = binary.AppendUvarint(e.body, flagsOf(s))
	}
	if mask&(1<<bitClock) != 0 {
		e.body = binary.AppendUvarint(e.body, s.ClockEventReasons)
	}
	if mask&(1<<bitPCIe) != 0 {
		e.body = append(e.body, s.PCIeLinkGen, s.PCIeLinkGenMax, s.PCIeLinkWidth, s.PCIeLinkWidthMax)
	}
	if mask&(1<<bitNVLink) != 0 {
		e.body = append(e.body, s.NVLinkUp, s.NVLinkTotal)
	}
	if mask&(1<<bitRecovery) != 0 {
		e.body = append(e.body, s.RecoveryAction)
	}
	if mask&(1<<bitRead) != 0 {
		e.body = binary.AppendUvarint(e.body, uint64(s.CountersRead))
	}
	if mask&(1<<bitSkip) != 0 {
		e.body = binary.AppendUvarint(e.body, skip)
	}
	for i, v := range s.Counters {
		if mask&(1<<(bitCounter0+i)) != 0 {
			e.body = binary.AppendUvarint(e.body, zigzag(int64(v-p.Counters[i])))
		}
	}
	xids := e.prev.Xids[:0]
	e.prev = *s
	e.prev.Xids = xids
	e.prevG = g
	return nil
}

func (e *Encoder) flushRun() {
	if e.run > 0 {
		e.body = binary.AppendUvarint(e.body, 0)
		e.body = binary.AppendUvarint(e.body, e.run)
		e.run = 0
	}
}

// Bytes returns the whole file: header and records.
func (e *Encoder) Bytes() []byte {
	e.flushRun()
	out := append([]byte(Magic), nil...)
	out = binary.AppendUvarint(out, Version)
	out = binary.AppendUvarint(out, uint64(e.h.GPU))
	out = binary.AppendVarint(out, e.h.Start.Unix())
	out = binary.AppendUvarint(out, uint64(e.h.Interval/time.Second))
	out = binary.AppendUvarint(out, uint64(e.h.Samples))
	return append(out, e.body...)
}
