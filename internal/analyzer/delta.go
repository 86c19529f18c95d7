package analyzer

import (
	"time"

	"github.com/gpuheal/gpuheal/internal/gpu"
)

// Counters whose rise matters more than their level. "Rising faster than
// a threshold" is delta.x / seconds in a rule; the engine remembers the
// previous reading of each GPU so rules need no state of their own.
var counterNames = [...]string{
	"pcieReplayCounter",
	"eccVolatileCorrected",
	"eccVolatileUncorrected",
	"eccAggregateCorrected",
	"eccAggregateUncorrected",
	"nvlinkCrcFlit", // summed over the GPU's links
	"nvlinkCrcData",
	"nvlinkReplay",
	"nvlinkRecovery",
}

// counters is one GPU's counter readings at one time.
type counters struct {
	at  time.Time
	v   [len(counterNames)]uint64
	has [len(counterNames)]bool
}

func readCounters(g *gpu.GPUSnapshot, at time.Time) counters {
	c := counters{at: at}
	set := func(i int, p *uint64) {
		if p != nil {
			c.v[i], c.has[i] = *p, true
		}
	}
	set(0, g.PCIe.ReplayCounter)
	set(1, g.ECC.VolatileCorrected)
	set(2, g.ECC.VolatileUncorrected)
	set(3, g.ECC.AggregateCorrected)
	set(4, g.ECC.AggregateUncorrected)
	for _, l := range g.NVLink {
		for i, p := range [...]*uint64{l.CRCFlit, l.CRCData, l.Replay, l.Recovery} {
			if p != nil {
				c.v[5+i] += *p
				c.has[5+i] = true
			}
		}
	}
	return c
}

// deltaVars is the delta variable: current minus previous, only for
// counters read both times. A counter that went down (driver reload,
// GPU reset) has no delta that interval rather than a huge wrapped one.
// seconds is 0 when there is no previous reading.
func deltaVars(cur counters, prev *counters) (map[string]any, float64) {
	m := make(map[string]any, len(counterNames))
	if prev == nil || !cur.at.After(prev.at) {
		return m, 0
	}
	for i, name := range counterNames {
		if cur.has[i] && prev.has[i] && cur.v[i] >= prev.v[i] {
			m[name] = i64(cur.v[i] - prev.v[i])
		}
	}
	return m, cur.at.Sub(prev.at).Seconds()
}
