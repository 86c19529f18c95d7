package trace

import (
	"fmt"
	"io"
	"time"

	"github.com/gpuheal/gpuheal/internal/predict"
)

// Decoder reads one GPU file. It checks everything it reads: a corrupt or
// hostile file yields an error naming the sample and byte, never a panic
// or an unbounded allocation.
type Decoder struct {
	h     Header
	c     cursor
	prev  predict.Sample
	prevG [predict.NumGauges]int64
	xids  []uint32
	n     int    // samples returned
	run   uint64 // repeats of prev still to return
	next  time.Time
}

// maxUnix (2200-01-01) bounds every time in a file, so that adding
// intervals cannot overflow a time.Duration.
const maxUnix = 7258118400

// NewDecoder reads the header of a GPU file held in data.
func NewDecoder(data []byte) (*Decoder, error) {
	d := &Decoder{c: cursor{data: data}}
	if err := d.header(); err != nil {
		return nil, fmt.Errorf("trace header (byte %d): %w", d.c.off, err)
	}
	for i := range d.prevG {
		d.prevG[i] = unreported
		d.prev.Gauges[i] = predict.NaN
	}
	d.next = d.h.Start
	return d, nil
}

func (d *Decoder) header() error {
	m, err := d.c.bytes(len(Magic))
	if err != nil || string(m) != Magic {
		return fmt.Errorf("not a trace file: want magic %q", Magic)
	}
	v, err := d.c.uvarint()
	if err != nil {
		return fmt.Errorf("version: %w", err)
	}
	if v != Version {
		return fmt.Errorf("version %d: this gpuheal reads version %d", v, Version)
	}
	gpu, err := d.c.bounded("gpu", 1<<31-1)
	if err != nil {
		return err
	}
	start, err := d.varint()
	if err != nil {
		return fmt.Errorf("start: %w", err)
	}
	// Years 1970–2200: also keeps Start+n*interval from overflowing.
	if start < 0 || start > maxUnix {
		return fmt.Errorf("start %d: not a Unix time between 1970 and 2200", start)
	}
	iv, err := d.c.bounded("interval", 86400)
	if err != nil {
		return err
	}
	if iv == 0 {
		return fmt.Errorf("interval 0: must be at least 1 s")
	}
	n, err := d.c.bounded("samples", MaxSamples)
	if err != nil {
		return err
	}
	d.h = Header{GPU: int(gpu), Start: time.Unix(start, 0).UTC(), Interval: time.Duration(iv) * time.Second, Samples: int(n)}
	return nil
}

func (d *Decoder) varint() (int64, error) {
	u, err := d.c.uvarint()
	return unzigzag(u), err
}

// Header returns the file's header.
func (d *Decoder) Header() Header { return d.h }

// Next decodes the next sample into s and returns io.EOF after the last.
// s.Xids points into the decoder's buffer, valid until the next call.
func (d *Decoder) Next(s *predict.Sample) error {
	if d.n >= d.h.Samples {
		if d.c.off != len(d.c.data) || d.run > 0 {
			return fmt.Errorf("trace: %d bytes or samples after the %d the header announces", len(d.c.data)-d.c.off+int(d.run), d.h.Samples)
		}
		return io.EOF
	}
	at := d.c.off
	if d.run == 0 {
		if err := d.record(); err != nil {
			return fmt.Errorf("trace: sample %d (byte %d): %w", d.n, at, err)
		}
	}
	if d.run > 0 {
		d.run--
		d.prev.Xids = nil
	}
	d.prev.Time = d.next
	d.next = d.next.Add(d.h.Interval)
	d.n++
	*s = d.prev
	return nil
}

// record reads one record into d.prev (or a run into d.run).
func (d *Decoder) record() error {
	mask, err := d.c.uvarint()
	if err != nil {
		return fmt.Errorf("field mask: %w", err)
	}
	if mask == 0 {
		n, err := d.c.bounded("run", uint64(d.h.Samples-d.n))
		if err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("run of 0 samples")
		}
		d.run = n
		return nil
	}
	if mask>>numBits != 0 {
		return fmt.Errorf("field mask %#x: unknown fields", mask)
	}
	p := &d.prev
	for i := range p.Gauges {
		if mask&(1<<i) != 0 {
			delta, err := d.varint()
			if err != nil {
				return fmt.Errorf("%s: %w", predict.GaugeNames[i], err)
			}
			v := d.prevG[i] + delta
			if v < unreported || v > 1<<31-1 {
				return fmt.Errorf("%s: %d out of range", predict.GaugeNames[i], v)
			}
			d.prevG[i], p.Gauges[i] = v, gaugeFloat(v)
		}
	}
	d.xids = d.xids[:0]
	if mask&(1<<bitXids) != 0 {
		n, err := d.c.bounded("xid count", MaxXidsPerSample)
		if err != nil {
			return err
		}
		for range n {
			x, err := d.c.bounded("xid", 1<<32-1)
			if err != nil {
				return err
			}
			d.xids = append(d.xids, uint32(x))
		}
	}
	p.Xids = d.xids
	if mask&(1<<bitFlags) != 0 {
		f, err := d.c.bounded("flags", 7)
		if err != nil {
			return err
		}
		p.Missing, p.RemappedRowsPending, p.RemappedRowsFailure = f&1 != 0, f&2 != 0, f&4 != 0
	}
	if mask&(1<<bitClock) != 0 {
		if p.ClockEventReasons, err = d.c.uvarint(); err != nil {
			return fmt.Errorf("clock event reasons: %w", err)
		}
	}
	if mask&(1<<bitPCIe) != 0 {
		b, err := d.c.bytes(4)
		if err != nil {
			return fmt.Errorf("pcie: %w", err)
		}
		p.PCIeLinkGen, p.PCIeLinkGenMax, p.PCIeLinkWidth, p.PCIeLinkWidthMax = b[0], b[1], b[2], b[3]
	}
	if mask&(1<<bitNVLink) != 0 {
		b, err := d.c.bytes(2)
		if err != nil {
			return fmt.Errorf("nvlink: %w", err)
		}
		p.NVLinkUp, p.NVLinkTotal = b[0], b[1]
	}
	if mask&(1<<bitRecovery) != 0 {
		b, err := d.c.bytes(1)
		if err != nil {
			return fmt.Errorf("recovery action: %w", err)
		}
		p.RecoveryAction = b[0]
	}
	if mask&(1<<bitRead) != 0 {
		r, err := d.c.bounded("counters read", uint64(predict.AllCountersRead))
		if err != nil {
			return err
		}
		p.CountersRead = uint16(r)
	}
	if mask&(1<<bitSkip) != 0 {
		k, err := d.c.bounded("time skip", maxSkip)
		if err != nil {
			return err
		}
		secs := int64(k) * int64(d.h.Interval/time.Second)
		if d.next.Unix()+secs > maxUnix {
			return fmt.Errorf("time skip %d: past the year 2200", k)
		}
		d.next = d.next.Add(time.Duration(secs) * time.Second)
	}
	for i := range p.Counters {
		if mask&(1<<(bitCounter0+i)) != 0 {
			delta, err := d.varint()
			if err != nil {
				return fmt.Errorf("%s: %w", predict.CounterNames[i], err)
			}
			p.Counters[i] += uint64(delta)
		}
	}
	return nil
}
