package evaluate

import (
	"context"
	"slices"
	"time"

	"github.com/gpuheal/gpuheal/internal/predict"
	"github.com/gpuheal/gpuheal/internal/predict/trace"
)

// Options for Evaluate.
type Options struct {
	Definitions
	// Floor is the lowest score the PR curve reaches (default 1e-3).
	Floor float64
	// CurvePoints is how many thresholds the curve sweeps (default 200).
	CurvePoints int
	Workers     int
}

// Report is what `gpuheal model eval` prints. The model's metrics at its
// operating threshold are at the top level; the baseline's under
// "baseline".
type Report struct {
	Metrics
	Baseline Metrics `json:"baseline"`
	// The targets read off the model's curve: the best precision
	// at recall ≥ 0.6 and the best recall at precision ≥ 0.92 (0: never).
	PrecisionAtRecall60 float64 `json:"precision_at_recall_0_6"`
	RecallAtPrecision92 float64 `json:"recall_at_precision_0_92"`
	// PrecursorOnsetOracle is what a predictor would score that alarmed
	// from the first moment of every precursor the traces' labels record,
	// and never otherwise: a ceiling set by failures without precursors
	// and by precursors that start long before the horizon. Absent when
	// the traces record no precursors (real fleets).
	PrecursorOnsetOracle *Metrics `json:"precursor_onset_oracle,omitempty"`
	HorizonSeconds       int64    `json:"horizon_seconds"`
	MinLeadSeconds       int64    `json:"min_lead_seconds"`
	ReraiseSeconds       int64    `json:"reraise_seconds"`
	Traces               []TraceInfo
	GPUDays              float64 `json:"gpu_days"`
	Samples              int64   `json:"samples"`
	// FailuresWithPrecursor bounds the recall any predictor can reach.
	FailuresWithPrecursor int             `json:"failures_with_precursor"`
	ByClass               []ClassResult   `json:"by_class"`
	FalseAlarms           []CauseCount    `json:"false_alarms"`
	Curve                 []CurvePoint    `json:"curve"`
	BaselineCurve         []CurvePoint    `json:"baseline_curve"`
	BaselineLevels        map[string]int8 `json:"baseline_levels"`
}

// TraceInfo describes one evaluated trace set.
type TraceInfo struct {
	Dir      string  `json:"dir"`
	Source   string  `json:"source"`
	Seed     uint64  `json:"seed"`
	GPUs     int     `json:"gpus"`
	Days     float64 `json:"days"`
	Failures int     `json:"failures"`
}

// ClassResult is recall per failure class.
type ClassResult struct {
	Class             string `json:"class"`
	Failures          int    `json:"failures"`
	WithPrecursor     int    `json:"with_precursor"`
	Detected          int    `json:"detected"`
	BaselineDetected  int    `json:"baseline_detected"`
	DetectedPrecursor int    `json:"detected_with_precursor"`
}

// CauseCount counts false alarms by what was going on at the time.
type CauseCount struct {
	Cause    string `json:"cause"`
	Model    int    `json:"model"`
	Baseline int    `json:"baseline"`
}

// Evaluate scores every sample of the sets with m and with the baseline
// rules and reports both at m's threshold.
func Evaluate(ctx context.Context, sets []*trace.Set, m *predict.Model, o Options) (*Report, error) {
	if err := o.Check(); err != nil {
		return nil, err
	}
	if o.Floor <= 0 {
		o.Floor = 1e-3
	}
	if o.CurvePoints <= 0 {
		o.CurvePoints = 200
	}
	c, err := Collect(ctx, sets, m, CollectOptions{Floor: min(o.Floor, m.Threshold), Workers: o.Workers})
	if err != nil {
		return nil, err
	}
	r := &Report{HorizonSeconds: int64(o.Horizon.Seconds()), MinLeadSeconds: int64(o.MinLead.Seconds()),
		ReraiseSeconds: int64(o.Reraise().Seconds()), Samples: c.Samples,
		BaselineLevels: map[string]int8{"any rule active (warning or fatal)": levelWarning, "a fatal rule active": levelFatal}}
	for _, s := range sets {
		mf := s.Manifest
		r.Traces = append(r.Traces, TraceInfo{Dir: s.Dir, Source: mf.Source, Seed: mf.Seed, GPUs: mf.GPUs, Days: mf.Days, Failures: len(mf.Failures)})
		r.GPUDays += float64(mf.GPUs) * mf.Days
	}

	classes := map[string]*ClassResult{}
	failureOf := func(si, fi int) trace.Failure {
		sl := c.Slots[si]
		return sets[sl.Set].Manifest.LabelsFor(sl.GPU).Failures()[fi]
	}
	classOf := func(si, fi int) (*ClassResult, bool) {
		f := failureOf(si, fi)
		cr := classes[f.Class]
		if cr == nil {
			cr = &ClassResult{Class: f.Class}
			classes[f.Class] = cr
		}
		return cr, f.PrecursorStart != nil
	}
	r.Metrics = At(c.Model, m.Threshold, o.Definitions, func(si, fi int, detected bool, _ time.Duration) {
		cr, pre := classOf(si, fi)
		cr.Failures++
		if pre {
			cr.WithPrecursor++
			r.FailuresWithPrecursor++
		}
		if detected {
			cr.Detected++
			if pre {
				cr.DetectedPrecursor++
			}
		}
	})
	r.Baseline = At(c.Baseline, levelWarning, o.Definitions, func(si, fi int, detected bool, _ time.Duration) {
		if cr, _ := classOf(si, fi); detected {
			cr.BaselineDetected++
		}
	})
	r.Curve, r.PRAUC = Curve(c.Model, Thresholds(c.Model, o.CurvePoints, m.Threshold), o.Definitions)
	r.BaselineCurve, r.Baseline.PRAUC = Curve(c.Baseline, []float64{levelFatal, levelWarning}, o.Definitions)
	for _, p := range r.Curve {
		if p.Recall >= 0.6 {
			r.PrecisionAtRecall60 = max(r.PrecisionAtRecall60, p.Precision)
		}
		if p.Precision >= 0.92 {
			r.RecallAtPrecision92 = max(r.RecallAtPrecision92, p.Recall)
		}
	}
	r.PrecursorOnsetOracle = onsetOracle(sets, c, o.Definitions)
	for _, cr := range classes {
		r.ByClass = append(r.ByClass, *cr)
	}
	slices.SortFunc(r.ByClass, func(a, b ClassResult) int { return b.Failures - a.Failures })
	r.FalseAlarms = falseAlarmCauses(sets, c, m.Threshold, o.Definitions)
	return r, nil
}

// onsetOracle scores a predictor that alarms at every sample from each
// labelled precursor's start to its failure.
func onsetOracle(sets []*trace.Set, c *Collected, d Definitions) *Metrics {
	series := make([]Series, len(c.Slots))
	labelled := false
	step := int64(predict.Interval.Seconds())
	for i, sl := range c.Slots {
		series[i].Failures = c.Model[i].Failures
		for _, f := range sets[sl.Set].Manifest.LabelsFor(sl.GPU).Failures() {
			if f.PrecursorStart == nil {
				continue
			}
			labelled = true
			for t := f.PrecursorStart.Unix(); t < f.Time.Unix(); t += step {
				series[i].Points = append(series[i].Points, Point{T: t, S: 1})
			}
		}
	}
	if !labelled {
		return nil
	}
	m := At(series, 1, d, nil)
	return &m
}
