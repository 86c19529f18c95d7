package gbt

import (
	"errors"
	"fmt"
	"math"
)

// Params control the fit.
type Params struct {
	Trees        int     `json:"trees"`        // at most this many trees
	MaxDepth     int     `json:"maxDepth"`     // levels of splits per tree
	LearningRate float64 `json:"learningRate"` // shrinkage of each tree's leaf values
	// Lambda is the L2 penalty on leaf values; MinChildWeight the least
	// hessian (weighted p(1−p)) a child may have.
	Lambda         float64 `json:"lambda"`
	MinChildWeight float64 `json:"minChildWeight"`
	MaxBins        int     `json:"maxBins"` // ≤ 253
	// EarlyStop ends the fit when the validation loss has not improved
	// for this many trees; the best prefix is kept. 0 turns it off.
	EarlyStop int `json:"earlyStop"`
}

// DefaultParams are the parameters docs/predictor.md reports.
func DefaultParams() Params {
	return Params{Trees: 600, MaxDepth: 5, LearningRate: 0.05, Lambda: 1, MinChildWeight: 1, MaxBins: 64, EarlyStop: 30}
}

// Node is a tree node: a split sends x[Feature] ≤ Threshold (not NaN) to
// Left, else Right; a leaf has Leaf set and adds Value to the margin.
type Node struct {
	Feature     int
	Threshold   float32
	Left, Right int
	Leaf        bool
	Value       float32
}

// Tree is a regression tree; Nodes[0] is the root and children follow
// their parent.
type Tree struct{ Nodes []Node }

// Ensemble is the fitted model: margin = Base + Σ tree values, and
// probability = logistic(margin).
type Ensemble struct {
	Base  float64
	Trees []Tree
}

// Margin returns the log-odds for one row.
func (e *Ensemble) Margin(x []float32) float64 {
	m := e.Base
	for i := range e.Trees {
		m += float64(e.Trees[i].value(x))
	}
	return m
}

func (t *Tree) value(x []float32) float32 {
	i := 0
	for {
		n := &t.Nodes[i]
		if n.Leaf {
			return n.Value
		}
		if x[n.Feature] <= n.Threshold {
			i = n.Left
		} else {
			i = n.Right
		}
	}
}

// Report says how the fit went.
type Report struct {
	Trees          int     // trees kept
	TrainLoss      float64 // weighted mean log-loss
	ValidationLoss float64
}

// Fit trains an ensemble on train, stopping early on valid (may be nil).
func Fit(train, valid *Data, p Params) (*Ensemble, Report, error) {
	if err := train.check(); err != nil {
		return nil, Report{}, fmt.Errorf("training %w", err)
	}
	if valid != nil {
		if err := valid.check(); err != nil {
			return nil, Report{}, fmt.Errorf("validation %w", err)
		}
	}
	if p.Trees < 1 || p.MaxDepth < 1 || p.MaxDepth > 12 || p.MaxBins < 2 || p.MaxBins > 253 || !(p.LearningRate > 0) {
		return nil, Report{}, fmt.Errorf("params %+v: want trees ≥ 1, depth 1..12, bins 2..253, learning rate > 0", p)
	}
	var pos, neg float64
	for i, y := range train.Y {
		if y == 1 {
			pos += float64(train.W[i])
		} else {
			neg += float64(train.W[i])
		}
	}
	if pos == 0 || neg == 0 {
		return nil, Report{}, errors.New("training data has only one class")
	}
	bins := newBinning(train, p.MaxBins)
	b := &builder{p: p, bins: bins, cols: bins.columns(train), d: train}
	e := &Ensemble{Base: math.Log(pos / neg)}
	margin := filled(train.Rows(), e.Base)
	var vmargin []float64
	if valid != nil {
		vmargin = filled(valid.Rows(), e.Base)
	}
	best, bestLoss, rep := 0, math.Inf(1), Report{}
	for t := range p.Trees {
		tree := b.grow(margin)
		e.Trees = append(e.Trees, tree)
		for i := range margin {
			margin[i] += float64(tree.value(train.X[i*train.Features : (i+1)*train.Features]))
		}
		if valid == nil {
			best = t + 1
			continue
		}
		for i := range vmargin {
			vmargin[i] += float64(tree.value(valid.X[i*valid.Features : (i+1)*valid.Features]))
		}
		if l := logLoss(valid, vmargin); l < bestLoss-1e-9 {
			best, bestLoss = t+1, l
		} else if p.EarlyStop > 0 && t+1-best >= p.EarlyStop {
			break
		}
	}
	e.Trees = e.Trees[:best]
	rep.Trees = best
	rep.TrainLoss = logLoss(train, marginsOf(e, train))
	if valid != nil {
		rep.ValidationLoss = logLoss(valid, marginsOf(e, valid))
	}
	return e, rep, nil
}

func filled(n int, v float64) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = v
	}
	return s
}

func marginsOf(e *Ensemble, d *Data) []float64 {
	m := make([]float64, d.Rows())
	for i := range m {
		m[i] = e.Margin(d.X[i*d.Features : (i+1)*d.Features])
	}
	return m
}

// logLoss is the weighted mean logistic loss.
func logLoss(d *Data, margin []float64) float64 {
	var sum, wsum float64
	for i, m := range margin {
		w := float64(d.W[i])
		// log(1+e^−m) for y=1, log(1+e^m) for y=0, computed stably.
		z := m
		if d.Y[i] == 1 {
			z = -m
		}
		sum += w * (math.Max(z, 0) + math.Log1p(math.Exp(-math.Abs(z))))
		wsum += w
	}
	return sum / wsum
}
