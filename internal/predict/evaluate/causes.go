package evaluate

import (
	"cmp"
	"slices"

	"github.com/gpuheal/gpuheal/internal/predict/trace"
)

// Causes of false alarms, besides the episode kinds a generator records.
const (
	causeFailsLater = "gpu fails 30 min–24 h later (precursor seen early)"
	causeNone       = "nothing recorded"
)

// falseAlarmCauses explains each false alarm by what the trace says was
// going on: the GPU failing later that day, else the most recent recorded
// episode (benign burst, crash loop, chronic condition) active in the two
// hours before the alarm, else nothing.
func falseAlarmCauses(sets []*trace.Set, c *Collected, thr float64, d Definitions) []CauseCount {
	counts := map[string]*CauseCount{}
	h, re := int64(d.Horizon.Seconds()), int64(d.Reraise().Seconds())
	episodes := map[Slot][]trace.Episode{}
	for si, s := range sets {
		for _, e := range s.Manifest.Episodes {
			k := Slot{si, e.GPU}
			episodes[k] = append(episodes[k], e)
		}
	}
	for which, series := range [][]Series{c.Model, c.Baseline} {
		level := float32(thr)
		if which == 1 {
			level = levelWarning
		}
		for i := range series {
			s := &series[i]
			for _, t := range alarms(s, level, re, nil) {
				cause := causeOf(s.Failures, episodes[c.Slots[i]], t, h)
				if cause == "" {
					continue
				}
				cc := counts[cause]
				if cc == nil {
					cc = &CauseCount{Cause: cause}
					counts[cause] = cc
				}
				if which == 0 {
					cc.Model++
				} else {
					cc.Baseline++
				}
			}
		}
	}
	out := make([]CauseCount, 0, len(counts))
	for _, cc := range counts {
		out = append(out, *cc)
	}
	slices.SortFunc(out, func(a, b CauseCount) int {
		return cmp.Or(cmp.Compare(b.Model+b.Baseline, a.Model+a.Baseline), cmp.Compare(a.Cause, b.Cause))
	})
	return out
}

// causeOf returns "" for a true alarm.
func causeOf(failures []int64, eps []trace.Episode, t, horizon int64) string {
	for _, f := range failures {
		if f > t && f-t <= horizon {
			return ""
		}
		if f > t && f-t <= 86400 {
			return causeFailsLater
		}
	}
	best, bestStart := causeNone, int64(-1<<62)
	for _, e := range eps {
		s, end := e.Start.Unix(), e.End.Unix()
		if s <= t && end >= t-7200 && s > bestStart {
			best, bestStart = e.Kind, s
		}
	}
	return best
}
