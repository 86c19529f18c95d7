// Package score computes a node's health score (0–100) and tier from its
// incident history, the agent's current warnings and a predicted failure
// risk. It is a pure function of its input and the time given: nothing is
// remembered between calls, so a restarted controller that reads the same
// history from the audit store publishes the same score. The formula and
// its defaults are in docs/health-score.md.
package score

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
)

// Scale is the penalty, in points, that brings the score from 100 to
// 100/e (36.8). It is fixed: scaling it is the same as scaling every
// weight.
const Scale = 100

// Config sets the weights and thresholds. Start from DefaultConfig.
type Config struct {
	// HalfLife: an incident this old weighs half as much as a new one.
	HalfLife time.Duration
	// Weights are penalty points per class for an incident happening now.
	// A class missing from the map keeps its default weight.
	Weights map[Class]float64
	// WarningWeight is points per warning the agent reports now, up to
	// MaxWarningPenalty in all.
	WarningWeight     float64
	MaxWarningPenalty float64
	// RiskWeight is points at a predicted failure risk of 1.
	RiskWeight float64
	// GoldMin and SilverMin are the lowest scores of each tier.
	GoldMin, SilverMin float64
	// Hysteresis is how far, in points, a score may stray past its
	// previous tier's band before the tier changes; 0 turns it off.
	Hysteresis float64
}

// DefaultWeights returns a fresh copy of the default weight per class.
func DefaultWeights() map[Class]float64 {
	m := make(map[Class]float64, numClasses)
	for _, c := range Classes() {
		m[c] = defaultWeights[c]
	}
	return m
}

var defaultWeights = [numClasses]float64{
	ClassInfo:       0,
	ClassRestartApp: 2,
	ClassWarning:    3,
	ClassResetGPU:   12,
	ClassFatal:      15,
	ClassReboot:     20,
	ClassReplace:    40,
}

// DefaultConfig returns the defaults documented in docs/health-score.md.
func DefaultConfig() Config {
	return Config{
		HalfLife:          7 * 24 * time.Hour,
		Weights:           DefaultWeights(),
		WarningWeight:     5,
		MaxWarningPenalty: 15,
		RiskWeight:        30,
		GoldMin:           90,
		SilverMin:         70,
		Hysteresis:        2,
	}
}

// Validate reports every invalid field, each error naming it.
func (c Config) Validate() error {
	var errs []error
	bad := func(field string, v float64) {
		errs = append(errs, fmt.Errorf("%s must be a finite number ≥ 0, got %v", field, v))
	}
	nonNeg := func(field string, v float64) {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			bad(field, v)
		}
	}
	if c.HalfLife <= 0 {
		errs = append(errs, fmt.Errorf("HalfLife must be positive, got %v", c.HalfLife))
	}
	for _, cl := range Classes() { // fixed order keeps the message stable
		if w, ok := c.Weights[cl]; ok {
			nonNeg("Weights["+cl.String()+"]", w)
		}
	}
	for cl := range c.Weights {
		if !cl.valid() {
			errs = append(errs, fmt.Errorf("Weights: %v is not a class", cl)) //nolint:staticcheck // starts with the field's name
		}
	}
	nonNeg("WarningWeight", c.WarningWeight)
	nonNeg("MaxWarningPenalty", c.MaxWarningPenalty)
	nonNeg("RiskWeight", c.RiskWeight)
	nonNeg("Hysteresis", c.Hysteresis)
	inRange := func(field string, v float64) bool {
		if math.IsNaN(v) || v <= 0 || v > 100 {
			errs = append(errs, fmt.Errorf("%s must be in (0, 100], got %v", field, v))
			return false
		}
		return true
	}
	okG, okS := inRange("GoldMin", c.GoldMin), inRange("SilverMin", c.SilverMin)
	if okG && okS {
		if c.SilverMin >= c.GoldMin {
			errs = append(errs, fmt.Errorf("SilverMin (%v) must be below GoldMin (%v)", c.SilverMin, c.GoldMin))
		} else if gap := c.GoldMin - c.SilverMin; c.Hysteresis > gap/2 {
			errs = append(errs, fmt.Errorf("Hysteresis (%v) must be at most half of GoldMin − SilverMin (%v)", c.Hysteresis, gap)) //nolint:staticcheck // starts with the field's name
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("health score config: %w", err)
	}
	return nil
}

// Scorer scores nodes with one validated Config. It is immutable and safe
// for concurrent use.
type Scorer struct {
	cfg     Config
	weights [numClasses]float64 // index 0: events without a class
	decay   float64             // ln 2 / half-life in seconds
}

// New validates cfg and returns a Scorer for it.
func New(cfg Config) (*Scorer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Scorer{cfg: cfg, decay: math.Ln2 / cfg.HalfLife.Seconds()}
	s.cfg.Weights = DefaultWeights()
	for _, c := range Classes() {
		w := defaultWeights[c]
		if v, ok := cfg.Weights[c]; ok {
			w = v
		}
		s.weights[c] = w
		s.cfg.Weights[c] = w
	}
	s.weights[0] = s.weights[ClassWarning]
	return s, nil
}

// Config returns the configuration in effect, with every weight filled in.
func (s *Scorer) Config() Config {
	c := s.cfg
	c.Weights = make(map[Class]float64, numClasses)
	for k, v := range s.cfg.Weights {
		c.Weights[k] = v
	}
	return c
}

// Event is one past incident.
type Event struct {
	Time  time.Time `json:"time"`
	Class Class     `json:"class"`
	// GPU is the UUID of the GPU at fault, when one is known.
	GPU string `json:"gpu,omitempty"`
}

// Input is what a node's score is computed from.
type Input struct {
	// Events is the incident history, in any order. Events older than
	// Scorer.Horizon may be left out.
	Events []Event
	// Warnings the agent reports now; negative counts as 0.
	Warnings int
	// Risk is the predicted probability of failure, 0–1; 0 or NaN when
	// unknown. Values outside 0–1 are clamped.
	Risk float64
}

// Penalty is the score's breakdown in points, for explanations.
type Penalty struct {
	History  float64 `json:"history"`
	Warnings float64 `json:"warnings"`
	Risk     float64 `json:"risk"`
}

// Total is the sum of the three terms.
func (p Penalty) Total() float64 { return p.History + p.Warnings + p.Risk }

// Result is a score, its tier and why.
type Result struct {
	// Score is 100·exp(−penalty/Scale), rounded to one decimal, so the
	// published annotation and the tier derived from it always agree.
	Score   float64 `json:"score"`
	Tier    Tier    `json:"tier"`
	Penalty Penalty `json:"penalty"`
}

// ScoreText formats the score for the annotation gpuheal.io/health-score.
func (r Result) ScoreText() string { return strconv.FormatFloat(r.Score, 'f', 1, 64) }

// String explains the result, e.g. for an Event or a log line.
func (r Result) String() string {
	return fmt.Sprintf("%s %s (history %.1f, warnings %.1f, risk %.1f)",
		r.ScoreText(), r.Tier, r.Penalty.History, r.Penalty.Warnings, r.Penalty.Risk)
}

// Score computes a node's score at now.
func (s *Scorer) Score(in Input, now time.Time) Result {
	var p Penalty
	for i := range in.Events {
		p.History += s.eventPenalty(&in.Events[i], now)
	}
	if in.Warnings > 0 {
		p.Warnings = min(float64(in.Warnings)*s.cfg.WarningWeight, s.cfg.MaxWarningPenalty)
	}
	if r := in.Risk; r > 0 { // false for NaN
		p.Risk = min(r, 1) * s.cfg.RiskWeight
	}
	return s.result(p)
}

// ScoreGPUs scores each GPU named by an event from the events naming it.
// Warnings and risk are the node's and are not attributed to a GPU; a GPU
// no event names is not in the map (its score is 100).
func (s *Scorer) ScoreGPUs(in Input, now time.Time) map[string]Result {
	hist := make(map[string]float64)
	for i := range in.Events {
		if e := &in.Events[i]; e.GPU != "" {
			hist[e.GPU] += s.eventPenalty(e, now)
		}
	}
	out := make(map[string]Result, len(hist))
	for gpu, h := range hist {
		out[gpu] = s.result(Penalty{History: h})
	}
	return out
}

// eventPenalty is the event's weight halved per half-life of age. An event
// in the future (clock skew between the writer and us) counts as now.
func (s *Scorer) eventPenalty(e *Event, now time.Time) float64 {
	w := s.weights[0]
	if e.Class.valid() {
		w = s.weights[e.Class]
	}
	if w == 0 {
		return 0
	}
	age := now.Sub(e.Time).Seconds()
	if age <= 0 {
		return w
	}
	return w * math.Exp(-s.decay*age)
}

func (s *Scorer) result(p Penalty) Result {
	score := math.Round(1000*math.Exp(-p.Total()/Scale)) / 10
	return Result{Score: score, Tier: s.Tier(score), Penalty: p}
}

// horizonPoints is what an event may still weigh when it is past the
// horizon: invisible at the one decimal published.
const horizonPoints = 0.01

// Horizon is the age past which even the heaviest class weighs under 0.01
// points, so the audit store need not load older events (about 12
// half-lives with the defaults: 84 days).
func (s *Scorer) Horizon() time.Duration {
	maxW := 0.0
	for _, w := range s.weights {
		maxW = max(maxW, w)
	}
	if maxW <= horizonPoints {
		return 0
	}
	d := math.Ceil(math.Log2(maxW/horizonPoints) * float64(s.cfg.HalfLife))
	if d >= math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(d)
}
