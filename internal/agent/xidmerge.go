package agent

import (
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/gpuheal/gpuheal/internal/analyzer"
	"github.com/gpuheal/gpuheal/internal/detect"
	"github.com/gpuheal/gpuheal/internal/finding"
	"github.com/gpuheal/gpuheal/internal/gpu"
	"github.com/gpuheal/gpuheal/internal/xid"
)

// xidDedupeWindow joins the kernel log's line and NVML's event for one Xid
// (same GPU, same code). Both are stamped near the moment the driver
// reported it, but by different clocks: the kernel's record time (boot
// time plus its monotonic stamp, which drifts by seconds from the wall
// clock) and NVML's arrival at the event reader.
const xidDedupeWindow = 10 * time.Second

// maxXidKeys bounds each source's memory of recent (GPU, code) pairs.
const maxXidKeys = 256

// xidMerge makes Xids the driver delivers through NVML events count as
// kernel-log Xids do: classified by the same catalog (with the rules
// config's overrides), repeats counted against the same thresholds, and
// handed to the analyzer as findings, so that a node whose kernel log
// cannot be read still goes unhealthy on Xid 79. An Xid both sources saw
// is one finding: whichever arrives second within xidDedupeWindow of the
// other is dropped. The kernel's line usually comes first (it is read
// within a poll; events wait for the next collection) and it carries the
// driver's text, so it is the one kept.
type xidMerge struct {
	mu      sync.Mutex
	catalog xid.Catalog
	counter *xid.Counter
	kernel  map[xidKey]time.Time
	nvml    map[xidKey]time.Time
}

type xidKey struct {
	gpu  string
	code uint64
}

func newXidMerge(cat xid.Catalog) *xidMerge {
	return &xidMerge{catalog: cat, counter: xid.NewCounter(0, xid.DefaultCoalesce),
		kernel: map[xidKey]time.Time{}, nvml: map[xidKey]time.Time{}}
}

func (m *xidMerge) setCatalog(cat xid.Catalog) {
	m.mu.Lock()
	m.catalog = cat
	m.mu.Unlock()
}

// fromKernel records a kernel-log finding and says whether to pass it on:
// false for an Xid NVML already reported.
func (m *xidMerge) fromKernel(f finding.Finding) bool {
	if f.Xid == 0 || f.Time.IsZero() {
		return true
	}
	k := xidKey{f.GPU, f.Xid}
	m.mu.Lock()
	defer m.mu.Unlock()
	dup := near(m.nvml, k, f.Time)
	remember(m.kernel, k, f.Time)
	return !dup
}

// fromSnapshot turns the snapshot's NVML Xid events into findings, less
// those the kernel log already reported.
func (m *xidMerge) fromSnapshot(s *gpu.NodeSnapshot) []finding.Finding {
	if s == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []finding.Finding
	for i := range s.GPUs {
		g := &s.GPUs[i]
		for _, ev := range g.XidEvents {
			at := ev.Time
			if at.IsZero() {
				at = s.Time
			}
			k := xidKey{g.PCIBusID, ev.Xid}
			if near(m.kernel, k, at) {
				continue
			}
			remember(m.nvml, k, at)
			out = append(out, m.findingLocked(g.PCIBusID, ev, at))
		}
	}
	return out
}

func (m *xidMerge) findingLocked(bus string, ev gpu.XidEvent, at time.Time) finding.Finding {
	detail := ""
	if ev.Xid == 154 {
		// The event's data is the new recovery action; say it as the
		// driver's line does, for the catalog's rule for 154.
		detail = fmt.Sprintf("GPU recovery action changed to 0x%x", ev.Data)
	}
	e := m.catalog.Classify(ev.Xid, detail)
	sev, act := e.Severity, e.Action
	if e.Threshold.Count > 0 && m.counter.Observe(ev.Xid, bus, at, e.Threshold) {
		sev, act = e.Escalated()
	}
	msg := "reported through NVML events"
	if e.Name != "" {
		msg = e.Name + " (" + msg + ")"
	}
	if detail != "" {
		msg += ": " + detail
	}
	return finding.Finding{Source: "nvml", Code: detect.XidCode(ev.Xid), Xid: ev.Xid, GPU: bus,
		Severity: sev, Action: act, Time: at, Message: msg}
}

// near says whether seen holds k within xidDedupeWindow of t.
func near(seen map[xidKey]time.Time, k xidKey, t time.Time) bool {
	prev, ok := seen[k]
	if !ok {
		return false
	}
	d := t.Sub(prev)
	return d <= xidDedupeWindow && d >= -xidDedupeWindow
}

// remember keeps the latest time of k, dropping pairs older than the
// window once the map is full (a node has a few dozen pairs at most).
func remember(seen map[xidKey]time.Time, k xidKey, t time.Time) {
	if prev, ok := seen[k]; ok && prev.After(t) {
		return
	}
	if _, ok := seen[k]; !ok && len(seen) >= maxXidKeys {
		for old, at := range seen {
			if t.Sub(at) > xidDedupeWindow {
				delete(seen, old)
			}
		}
		if len(seen) >= maxXidKeys {
			return
		}
	}
	seen[k] = t
}

// startXidMerge makes the merge with the catalog the kernel-log monitor
// uses, and keeps it current across reloads of the rules config.
func startXidMerge(o *Options, h *healthLoop, log *slog.Logger) (*xidMerge, error) {
	cat, err := xidCatalog(o, h.engine.RuleSet().XIDOverrides)
	if err != nil {
		return nil, err
	}
	m := newXidMerge(cat)
	h.onReload(func(rs *analyzer.RuleSet) {
		cat, err := xidCatalog(o, rs.XIDOverrides)
		if err != nil {
			log.Error("Xid overrides of the reloaded config rejected for NVML events; keeping the previous ones", "err", err)
			return
		}
		m.setCatalog(cat)
	})
	return m, nil
}

// nvmlFindings hands the snapshot's NVML Xids to the analyzer. The sim's
// Xids reach it through the sim's kernel log, so they are left out.
func (m *xidMerge) nvmlFindings(s *gpu.NodeSnapshot, add func(finding.Finding)) {
	if s == nil || s.Backend == BackendSim {
		return
	}
	for _, f := range m.fromSnapshot(s) {
		add(f)
	}
}
