package evaluate

import (
	"time"

	"github.com/gpuheal/gpuheal/internal/finding"
	"github.com/gpuheal/gpuheal/internal/predict"
	"github.com/gpuheal/gpuheal/internal/xid"
)

// Baseline levels: the worst default rule active on the GPU.
const (
	levelNone    = 0
	levelWarning = 1
	levelFatal   = 2
)

// baseline replays the GPU-scoped rules of the default rule set
// (internal/analyzer/default-rules.yaml) on one GPU's samples, with their
// thresholds, `for` durations and clear-after times, and the Xid rules
// through the Xid catalog (internal/xid) with its count thresholds. It
// re-implements them in Go rather than running the CEL engine because
// the engine costs tens of microseconds per GPU per evaluation
// (docs/benchmarks.md, "health analyzer"), hours for a fleet-month.
// Rules on data traces do not carry (driver version, fabric manager,
// query errors, the kernel's own problems) are left out.
type baseline struct {
	catalog xid.Catalog
	counter *xid.Counter
	prev    predict.Sample
	hasPrev bool
	// since: when a `for` rule's expression began to hold (zero: not holding).
	nvlinkDownSince, pcieDegradedSince, hwThermalSince, powerBrakeSince time.Time
	// until: when a rule with clearAfter or a finding rule clears.
	nvlinkErrUntil, replayUntil, xidWarnUntil, xidFatalUntil time.Time
	xidLatched                                               bool
}

func newBaseline(c xid.Catalog) *baseline {
	return &baseline{catalog: c, counter: xid.NewCounter(0, xid.DefaultCoalesce)}
}

// level absorbs one sample and returns the worst active rule's level.
func (b *baseline) level(s *predict.Sample) int {
	now := s.Time
	lv := levelNone
	raise := func(l int) { lv = max(lv, l) }
	b.xids(s, now)
	if b.xidLatched || now.Before(b.xidFatalUntil) {
		raise(levelFatal)
	}
	if now.Before(b.xidWarnUntil) {
		raise(levelWarning)
	}
	if s.Missing { // gpu-missing; the GPU's other readings are absent
		return levelFatal
	}
	c := &s.Counters
	has := func(i int) bool { return s.CountersRead&(1<<i) != 0 }
	switch {
	case has(predict.CounterECCUncorrected) && c[predict.CounterECCUncorrected] > 0: // double-bit-ecc
		raise(levelFatal)
	case has(predict.CounterECCAggregateUncorrected) && c[predict.CounterECCAggregateUncorrected] > 0: // double-bit-ecc-history
		raise(levelWarning)
	}
	if s.RemappedRowsFailure { // row-remap-failure
		raise(levelFatal)
	}
	if s.RemappedRowsPending { // row-remap-pending
		raise(levelWarning)
	}
	switch s.RecoveryAction { // recovery-action-*
	case 1, 2, 4:
		raise(levelFatal)
	case 3:
		raise(levelWarning)
	}
	// nvlink-down, NVSwitch board: any link down for 1m.
	if holdsFor(&b.nvlinkDownSince, s.NVLinkUp < s.NVLinkTotal, now, time.Minute) {
		raise(levelFatal)
	}
	degraded := (s.PCIeLinkWidth > 0 && s.PCIeLinkWidth < s.PCIeLinkWidthMax) ||
		(s.PCIeLinkGen > 0 && s.PCIeLinkGen < s.PCIeLinkGenMax && s.ClockEventReasons&0x1 == 0)
	if holdsFor(&b.pcieDegradedSince, degraded, now, 5*time.Minute) { // pcie-degraded
		raise(levelWarning)
	}
	if holdsFor(&b.hwThermalSince, s.ClockEventReasons&0x40 != 0, now, 5*time.Minute) { // thermal-slowdown
		raise(levelWarning)
	}
	if holdsFor(&b.powerBrakeSince, s.ClockEventReasons&0x80 != 0, now, 5*time.Minute) { // power-brake-slowdown
		raise(levelWarning)
	}
	if b.hasPrev {
		secs := now.Sub(b.prev.Time).Seconds()
		// nvlink-errors: > 1/s summed over the link counters; clearAfter 10m.
		var nv uint64
		for _, i := range []int{predict.CounterNVLinkCRCFlit, predict.CounterNVLinkCRCData, predict.CounterNVLinkReplay, predict.CounterNVLinkRecovery} {
			nv += b.delta(s, i)
		}
		if secs > 0 && float64(nv)/secs > 1 {
			b.nvlinkErrUntil = now.Add(10 * time.Minute)
		}
		// pcie-replay-rate: > 0.2/s; clearAfter 10m.
		if secs > 0 && float64(b.delta(s, predict.CounterPCIeReplay))/secs > 0.2 {
			b.replayUntil = now.Add(10 * time.Minute)
		}
	}
	if now.Before(b.nvlinkErrUntil) || now.Before(b.replayUntil) {
		raise(levelWarning)
	}
	b.prev, b.hasPrev = *s, true
	b.prev.Xids = nil
	return lv
}

// delta is the analyzer's delta: current − previous, absent (0) when
// either reading is missing or the counter went down.
func (b *baseline) delta(s *predict.Sample, i int) uint64 {
	if s.CountersRead&(1<<i) == 0 || b.prev.CountersRead&(1<<i) == 0 || s.Counters[i] < b.prev.Counters[i] {
		return 0
	}
	return s.Counters[i] - b.prev.Counters[i]
}

// xids runs the finding rules: xid-fatal-reboot (latched), xid-fatal
// (clearAfter 30m) and xid-warning (clearAfter 10m), with the catalog's
// count thresholds. Xids of one sample share its time, so a burst counts
// once, as the catalog's 1 s coalescing counts one fault's many lines.
func (b *baseline) xids(s *predict.Sample, now time.Time) {
	for _, code := range s.Xids {
		e := b.catalog.Lookup(uint64(code))
		sev, act := e.Severity, e.Action
		if b.counter.Observe(uint64(code), "gpu", now, e.Threshold) {
			sev, act = e.Escalated()
		}
		switch {
		case sev == finding.Fatal && (act == finding.ActionReboot || act == finding.ActionReplace):
			b.xidLatched = true
		case sev == finding.Fatal:
			b.xidFatalUntil = now.Add(30 * time.Minute)
		case sev == finding.Warning || sev == finding.Unknown:
			b.xidWarnUntil = now.Add(10 * time.Minute)
		}
	}
}

// holdsFor tracks a `for` rule: true once cond has held continuously for d.
func holdsFor(since *time.Time, cond bool, now time.Time, d time.Duration) bool {
	if !cond {
		*since = time.Time{}
		return false
	}
	if since.IsZero() {
		*since = now
	}
	return now.Sub(*since) >= d
}
