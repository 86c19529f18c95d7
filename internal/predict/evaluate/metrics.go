package evaluate

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Definitions are the numbers in the definitions of doc.go.
type Definitions struct {
	Horizon time.Duration
	MinLead time.Duration
}

// DefaultDefinitions are the issue's: a 30 min horizon, 10 min minimum lead.
func DefaultDefinitions() Definitions {
	return Definitions{Horizon: 30 * time.Minute, MinLead: 10 * time.Minute}
}

// Check validates the definitions.
func (d Definitions) Check() error {
	if d.Horizon <= 0 || d.MinLead < 0 || d.MinLead >= d.Horizon || d.Horizon%time.Second != 0 || d.MinLead%time.Second != 0 {
		return fmt.Errorf("horizon %s, minimum lead %s: want whole seconds, 0 ≤ lead < horizon", d.Horizon, d.MinLead)
	}
	return nil
}

// Reraise is the re-raise period: horizon − minimum lead.
func (d Definitions) Reraise() time.Duration { return d.Horizon - d.MinLead }

// Point is one scored sample: Unix seconds and score.
type Point struct {
	T int64
	S float32
}

// Series is one GPU slot's scored samples (those at or above some floor,
// in time order) and its failure times (Unix seconds, in order).
type Series struct {
	Points   []Point
	Failures []int64
}

// Metrics are the event-level results at one threshold.
type Metrics struct {
	Threshold         float64    `json:"threshold"`
	Precision         float64    `json:"precision"`
	Recall            float64    `json:"recall"`
	PRAUC             float64    `json:"pr_auc"`
	MedianLeadSeconds float64    `json:"median_lead_seconds"`
	PrecisionCI95     [2]float64 `json:"precision_ci95"`
	RecallCI95        [2]float64 `json:"recall_ci95"`
	Alarms            int        `json:"alarms"`
	TrueAlarms        int        `json:"true_alarms"`
	Failures          int        `json:"failures"`
	Detected          int        `json:"detected"`
	// AlarmedFailures had an alarm within the horizon, however late.
	AlarmedFailures int `json:"alarmed_failures"`
}

// outcome is the per-failure result of one threshold.
type outcome struct {
	detected, alarmed bool
	lead              int64
}

// alarms returns the alarm times of a series at threshold thr.
func alarms(s *Series, thr float32, reraise int64, out []int64) []int64 {
	last := int64(math.MinInt64 / 2)
	for _, p := range s.Points {
		if p.S >= thr && p.T-last >= reraise {
			out = append(out, p.T)
			last = p.T
		}
	}
	return out
}

// At computes the metrics of all series at threshold thr (PR-AUC is
// left 0; Curve fills it). outcomes, if not nil, receives each failure's
// result in series order.
func At(series []Series, thr float64, d Definitions, outcomes func(series, failure int, detected bool, lead time.Duration)) Metrics {
	h, l, re := int64(d.Horizon.Seconds()), int64(d.MinLead.Seconds()), int64(d.Reraise().Seconds())
	m := Metrics{Threshold: thr}
	var leads []int64
	var buf []int64
	for si := range series {
		s := &series[si]
		buf = alarms(s, float32(thr), re, buf[:0])
		m.Alarms += len(buf)
		// True alarms: the next failure after the alarm is within h.
		fi := 0
		for _, t := range buf {
			for fi < len(s.Failures) && s.Failures[fi] <= t {
				fi++
			}
			if fi < len(s.Failures) && s.Failures[fi]-t <= h {
				m.TrueAlarms++
			}
		}
		// Failures: alarms in [f−h, f).
		ai := 0
		for fi, f := range s.Failures {
			for ai < len(buf) && buf[ai] < f-h {
				ai++
			}
			o := outcome{}
			for j := ai; j < len(buf) && buf[j] < f; j++ {
				if !o.alarmed {
					o.alarmed, o.lead = true, f-buf[j]
				}
				if f-buf[j] >= l {
					o.detected = true
				}
			}
			m.Failures++
			if o.alarmed {
				m.AlarmedFailures++
				leads = append(leads, o.lead)
			}
			if o.detected {
				m.Detected++
			}
			if outcomes != nil {
				outcomes(si, fi, o.detected, time.Duration(o.lead)*time.Second)
			}
		}
	}
	m.Precision, m.PrecisionCI95 = ratio(m.TrueAlarms, m.Alarms)
	m.Recall, m.RecallCI95 = ratio(m.Detected, m.Failures)
	m.MedianLeadSeconds = median(leads)
	return m
}

// ratio is k/n and its Wilson 95 % interval; 0 and [0,0] when n is 0.
func ratio(k, n int) (float64, [2]float64) {
	if n == 0 {
		return 0, [2]float64{}
	}
	const z = 1.959964
	p, nf := float64(k)/float64(n), float64(n)
	den := 1 + z*z/nf
	mid := (p + z*z/(2*nf)) / den
	half := z * math.Sqrt(p*(1-p)/nf+z*z/(4*nf*nf)) / den
	return p, [2]float64{math.Max(0, mid-half), math.Min(1, mid+half)}
}

func median(v []int64) float64 {
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	n := len(v)
	if n%2 == 1 {
		return float64(v[n/2])
	}
	return float64(v[n/2-1]+v[n/2]) / 2
}
