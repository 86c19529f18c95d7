package train

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/gpuheal/gpuheal/internal/predict"
	"github.com/gpuheal/gpuheal/internal/predict/evaluate"
	"github.com/gpuheal/gpuheal/internal/predict/gbt"
	"github.com/gpuheal/gpuheal/internal/predict/trace"
)

// Summary is how training went; it is also recorded in the model file.
type Summary struct {
	Command string      `json:"command,omitempty"`
	Traces  []TraceInfo `json:"traces"`
	Samples int64       `json:"samples"`
	// Rows kept by the sampling, for fitting and for early stopping.
	TrainRows      int        `json:"trainRows"`
	ValidationRows int        `json:"validationRows"`
	PositiveRows   int        `json:"positiveRows"`
	Params         gbt.Params `json:"params"`
	// Sampling shares and the positive weight (see Options).
	NearRate       float64 `json:"nearRate"`
	ActiveRate     float64 `json:"activeRate"`
	QuietRate      float64 `json:"quietRate"`
	PositiveWeight float64 `json:"positiveWeight"`
	Trees          int     `json:"trees"`
	TrainLoss      float64 `json:"trainLoss"`
	ValidationLoss float64 `json:"validationLoss"`
	// Validation is the held-out slots' event-level result at the chosen
	// threshold (an optimistic estimate: the threshold was chosen on it).
	Validation      evaluate.Metrics `json:"validation"`
	MinPrecision    float64          `json:"minPrecision"`
	ValidationShare float64          `json:"validationShare"`
	// Seconds is not recorded in the file (it would make files differ).
	Seconds float64 `json:"-"`
}

// TraceInfo names a training trace set.
type TraceInfo struct {
	Source string  `json:"source"`
	Seed   uint64  `json:"seed"`
	GPUs   int     `json:"gpus"`
	Days   float64 `json:"days"`
}

// Train fits a model on the traces and chooses its threshold.
func Train(ctx context.Context, o Options) (*predict.Model, *Summary, error) {
	start := time.Now()
	if err := o.complete(); err != nil {
		return nil, nil, err
	}
	var sets []*trace.Set
	sum := &Summary{Command: o.Command, Params: o.Params, MinPrecision: o.MinPrecision, ValidationShare: o.ValidationShare,
		NearRate: o.NearRate, ActiveRate: o.ActiveRate, QuietRate: o.QuietRate, PositiveWeight: o.PositiveWeight}
	for _, dir := range o.Traces {
		s, err := trace.Open(dir)
		if err != nil {
			return nil, nil, err
		}
		sets = append(sets, s)
		m := s.Manifest
		sum.Traces = append(sum.Traces, TraceInfo{Source: m.Source, Seed: m.Seed, GPUs: m.GPUs, Days: m.Days})
	}
	rs, err := sampleRows(ctx, sets, &o)
	if err != nil {
		return nil, nil, err
	}
	sum.Samples, sum.TrainRows, sum.ValidationRows, sum.PositiveRows = rs.samples, rs.train.Rows(), rs.valid.Rows(), rs.positives
	o.Log.Info("sampled rows", "samples", rs.samples, "train", rs.train.Rows(), "validation", rs.valid.Rows(),
		"positives", rs.positives, "seconds", time.Since(start).Seconds())

	shift := math.Log(o.PositiveWeight)
	reweight(&rs.train, shift)
	reweight(&rs.valid, shift)
	ens, rep, err := gbt.Fit(&rs.train, &rs.valid, o.Params)
	if err != nil {
		return nil, nil, fmt.Errorf("fitting trees: %w", err)
	}
	sum.Trees, sum.TrainLoss, sum.ValidationLoss = rep.Trees, rep.TrainLoss, rep.ValidationLoss
	o.Log.Info("fitted trees", "trees", rep.Trees, "trainLoss", rep.TrainLoss, "validationLoss", rep.ValidationLoss,
		"seconds", time.Since(start).Seconds())

	f := fileOf(ens, shift, &o)
	m, err := predict.Compile(f)
	if err != nil {
		return nil, nil, fmt.Errorf("compiling the fitted model: %w", err)
	}
	thr, val, ap, err := chooseThreshold(ctx, sets, m, &o)
	if err != nil {
		return nil, nil, err
	}
	val.PRAUC = ap
	f.Threshold, sum.Validation = thr, val
	if f.Training, err = json.Marshal(sum); err != nil {
		return nil, nil, err
	}
	if m, err = predict.Compile(f); err != nil {
		return nil, nil, err
	}
	sum.Seconds = time.Since(start).Seconds()
	o.Log.Info("chose threshold", "threshold", thr, "precision", val.Precision, "recall", val.Recall, "seconds", sum.Seconds)
	return m, sum, nil
}

// reweight multiplies positive weights by e^shift and scales all weights
// to a mean of 1, so that the trees' hessians are of order one whatever
// the sampling rates.
func reweight(d *gbt.Data, shift float64) {
	k := math.Exp(shift)
	var total float64
	for i, y := range d.Y {
		if y == 1 {
			d.W[i] *= float32(k)
		}
		total += float64(d.W[i])
	}
	if total == 0 {
		return
	}
	scale := float64(d.Rows()) / total
	for i := range d.W {
		d.W[i] = float32(float64(d.W[i]) * scale)
	}
}

// fileOf turns the ensemble into a model file.
func fileOf(e *gbt.Ensemble, shift float64, o *Options) *predict.File {
	f := &predict.File{
		Format: predict.FileFormat, Version: predict.FileVersion, FeatureSet: predict.FeatureSet,
		Features: predict.FeatureNames(), IntervalSeconds: int(predict.Interval.Seconds()),
		HorizonSeconds: int(o.Horizon.Seconds()), MinLeadSeconds: int(o.MinLead.Seconds()),
		Threshold: 0.5, Base: e.Base - shift,
	}
	for _, t := range e.Trees {
		var pt predict.Tree
		for _, n := range t.Nodes {
			if n.Leaf {
				pt.Nodes = append(pt.Nodes, predict.Leaf(n.Value))
			} else {
				pt.Nodes = append(pt.Nodes, predict.Split(n.Feature, n.Threshold, n.Left, n.Right))
			}
		}
		f.Trees = append(f.Trees, pt)
	}
	return f
}

// minTrueAlarms: a threshold must have this many true alarms on the
// held-out slots before its precision counts, so that a few lucky alarms
// at the very top of the scores do not set the operating point.
const minTrueAlarms = 10

// chooseThreshold scores every sample of the held-out slots and picks the
// threshold with the most recall among those whose event-level precision
// reaches MinPrecision with at least minTrueAlarms true alarms (the
// highest such threshold when several tie); when none does, the one with
// the best F0.5 (precision weighted twice as much as recall). It also
// returns the held-out PR-AUC.
func chooseThreshold(ctx context.Context, sets []*trace.Set, m *predict.Model, o *Options) (float64, evaluate.Metrics, float64, error) {
	c, err := evaluate.Collect(ctx, sets, m, evaluate.CollectOptions{
		Floor:   1e-4,
		Workers: o.Workers,
		Include: func(set, gpu int) bool { return isValidation(o, sets[set].Manifest.Seed, gpu) },
	})
	if err != nil {
		return 0, evaluate.Metrics{}, 0, err
	}
	var best, bestF evaluate.Metrics
	found, fBest := false, -1.0
	for _, thr := range evaluate.Thresholds(c.Model, 400) {
		mt := evaluate.At(c.Model, thr, o.Definitions, nil)
		if mt.Alarms == 0 {
			continue
		}
		if mt.Precision >= o.MinPrecision && mt.TrueAlarms >= minTrueAlarms && (!found || mt.Recall > best.Recall) {
			best, found = mt, true
		}
		if f := fBeta(mt.Precision, mt.Recall, 0.5); f > fBest {
			bestF, fBest = mt, f
		}
	}
	if !found {
		best = bestF
	}
	if best.Alarms == 0 {
		return 0, best, 0, fmt.Errorf("choosing the threshold: the held-out slots raise no alarm at any score above 1e-4")
	}
	_, ap := evaluate.Curve(c.Model, evaluate.Thresholds(c.Model, 200), o.Definitions)
	return best.Threshold, best, ap, nil
}

func fBeta(p, r, beta float64) float64 {
	if p == 0 && r == 0 {
		return 0
	}
	b2 := beta * beta
	return (1 + b2) * p * r / (b2*p + r)
}
