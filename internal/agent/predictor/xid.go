package predictor

import (
	"time"

	"github.com/gpuheal/gpuheal/internal/gpu"
)

// An Xid reaches the agent twice on most nodes: from the GPU backend (the
// NVML event set, or the sim) and from the kernel log, which prints every
// Xid the driver raises. Only the kernel log sees them with the smi
// backend, only the backend when the kernel log is off or unreadable. The
// predictor counts each Xid once, whatever reported it:
//
//   - a report pairs with an earlier unpaired report of the other source
//     with the same code within xidPairWindow: the same event, not counted
//     again;
//   - an unpaired report counts, and waits for its partner for
//     xidPairWindow plus one interval (the partner may come a snapshot
//     later).
//
// Pairing is greedy and by count, so a storm of one code seen by both
// sources counts once per event. Two different events of one code within
// the window, each seen by only one source, would count once: rare, and an
// undercount.
const xidPairWindow = time.Minute

// maxUnpairedXids bounds the memory of a GPU in an Xid storm that only one
// source sees; the oldest reports are forgotten first.
const maxUnpairedXids = 256

// kernelXid is an Xid finding of the kernel log.
type kernelXid struct {
	code uint32
	at   time.Time
	bus  string // normalized PCI bus id
}

type xidReport struct {
	code   uint32
	at     time.Time
	kernel bool
}

// xidPairs holds one GPU's reports that still wait for their partner.
type xidPairs struct {
	unpaired []xidReport
}

// merge returns out with the Xids of this sample that count: the backend's
// events and the kernel log's Xids for this GPU, each event once.
func (p *xidPairs) merge(now time.Time, keep time.Duration, events []gpu.XidEvent, kernel []kernelXid, bus string, out []uint32) []uint32 {
	cut := now.Add(-keep)
	n := 0
	for _, r := range p.unpaired {
		if !r.at.Before(cut) {
			p.unpaired[n] = r
			n++
		}
	}
	p.unpaired = p.unpaired[:n]
	for _, e := range events {
		at := e.Time
		if at.IsZero() {
			at = now
		}
		code := uint32(min(e.Xid, 1<<32-1))
		if p.counts(xidReport{code: code, at: at}) {
			out = append(out, code)
		}
	}
	for _, k := range kernel {
		if k.bus == bus && p.counts(xidReport{code: k.code, at: k.at, kernel: true}) {
			out = append(out, k.code)
		}
	}
	return out
}

// counts pairs r with a waiting report of the other source, or keeps it
// waiting and says it is a new event.
func (p *xidPairs) counts(r xidReport) bool {
	for i, w := range p.unpaired {
		if w.code == r.code && w.kernel != r.kernel && absDuration(w.at.Sub(r.at)) <= xidPairWindow {
			p.unpaired = append(p.unpaired[:i], p.unpaired[i+1:]...)
			return false
		}
	}
	if len(p.unpaired) == maxUnpairedXids {
		p.unpaired = append(p.unpaired[:0], p.unpaired[1:]...)
	}
	p.unpaired = append(p.unpaired, r)
	return true
}

func absDuration(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}
