package score

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

const day = 24 * time.Hour

var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func ago(d time.Duration, c Class) Event { return Event{Time: now.Add(-d), Class: c} }

func newScorer(t testing.TB, mut func(*Config)) *Scorer {
	t.Helper()
	cfg := DefaultConfig()
	if mut != nil {
		mut(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var approx = cmpopts.EquateApprox(0, 1e-9)

func TestScore(t *testing.T) {
	s := newScorer(t, nil)
	tests := []struct {
		name string
		in   Input
		want Result
	}{
		{"fresh node", Input{}, Result{100, Gold, Penalty{}}},
		{"replace today", Input{Events: []Event{ago(0, ClassReplace)}},
			Result{67.0, Bronze, Penalty{History: 40}}},
		{"replace a week ago weighs half", Input{Events: []Event{ago(7*day, ClassReplace)}},
			Result{81.9, Silver, Penalty{History: 20}}},
		{"replace two weeks ago weighs a quarter", Input{Events: []Event{ago(14*day, ClassReplace)}},
			Result{90.5, Gold, Penalty{History: 10}}},
		{"replace a month ago", Input{Events: []Event{ago(30*day, ClassReplace)}},
			Result{98.0, Gold, Penalty{History: 40 * math.Pow(0.5, 30.0/7)}}},
		{"reboot today", Input{Events: []Event{ago(0, ClassReboot)}},
			Result{81.9, Silver, Penalty{History: 20}}},
		{"two reboots an hour apart, about one replace", Input{Events: []Event{ago(0, ClassReboot), ago(time.Hour, ClassReboot)}},
			Result{67.1, Bronze, Penalty{History: 20 + 20*math.Pow(0.5, 1.0/(7*24))}}},
		{"gpu reset today", Input{Events: []Event{ago(0, ClassResetGPU)}},
			Result{88.7, Silver, Penalty{History: 12}}},
		{"cordon-only fatal today", Input{Events: []Event{ago(0, ClassFatal)}},
			Result{86.1, Silver, Penalty{History: 15}}},
		{"warning in history", Input{Events: []Event{ago(0, ClassWarning)}},
			Result{97.0, Gold, Penalty{History: 3}}},
		{"app fault", Input{Events: []Event{ago(0, ClassRestartApp)}},
			Result{98.0, Gold, Penalty{History: 2}}},
		{"info weighs nothing", Input{Events: []Event{ago(0, ClassInfo)}},
			Result{100, Gold, Penalty{}}},
		{"event without class counts as warning", Input{Events: []Event{{Time: now}}},
			Result{97.0, Gold, Penalty{History: 3}}},
		{"two current warnings", Input{Warnings: 2}, Result{90.5, Gold, Penalty{Warnings: 10}}},
		{"warnings are capped", Input{Warnings: 50}, Result{86.1, Silver, Penalty{Warnings: 15}}},
		{"negative warnings count as none", Input{Warnings: -3}, Result{100, Gold, Penalty{}}},
		{"risk one half", Input{Risk: 0.5}, Result{86.1, Silver, Penalty{Risk: 15}}},
		{"risk certain", Input{Risk: 1}, Result{74.1, Silver, Penalty{Risk: 30}}},
		{"risk above 1 is clamped", Input{Risk: 7}, Result{74.1, Silver, Penalty{Risk: 30}}},
		{"risk unknown", Input{Risk: math.NaN()}, Result{100, Gold, Penalty{}}},
		{"negative risk", Input{Risk: -1}, Result{100, Gold, Penalty{}}},
		{"all terms", Input{
			Events:   []Event{ago(7*day, ClassReplace), ago(7*day, ClassReboot)},
			Warnings: 2, Risk: 0.2,
		}, Result{63.1, Bronze, Penalty{History: 30, Warnings: 10, Risk: 6}}},
		{"future event counts as now, not more", Input{Events: []Event{ago(-3*day, ClassReplace)}},
			Result{67.0, Bronze, Penalty{History: 40}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := s.Score(tt.in, now)
			if diff := cmp.Diff(tt.want, got, approx); diff != "" {
				t.Errorf("Score (-want +got):\n%s", diff)
			}
		})
	}
}

func TestScoreBounds(t *testing.T) {
	s := newScorer(t, nil)
	var in Input
	for i := range 500 {
		in.Events = append(in.Events, ago(time.Duration(i)*time.Hour, ClassReplace))
	}
	in.Warnings, in.Risk = 1000, math.Inf(1)
	got := s.Score(in, now)
	if got.Score != 0 || got.Tier != Bronze {
		t.Errorf("500 replacements: %v, want 0.0 bronze", got)
	}
	if math.IsNaN(got.Penalty.Total()) || got.Penalty.Total() <= 0 {
		t.Errorf("penalty %v", got.Penalty)
	}
	// Ancient and zero-time events neither break nor lower the score.
	old := Input{Events: []Event{{Class: ClassReplace}, ago(50*365*day, ClassReplace)}}
	if got := s.Score(old, now); got.Score != 100 || got.Tier != Gold {
		t.Errorf("ancient events: %v, want 100.0 gold", got)
	}
}

// TestMonotone checks the properties the score promises on random
// histories: another incident, a current warning or a higher risk never
// raises it; an older incident weighs no more than a newer one; time
// passing without incidents never lowers it; and it stays in 0–100.
func TestMonotone(t *testing.T) {
	s := newScorer(t, nil)
	rng := rand.New(rand.NewPCG(1, 2))
	classes := Classes()
	randEvent := func() Event {
		return ago(time.Duration(rng.Int64N(int64(90*day)))-day, classes[rng.IntN(len(classes))])
	}
	for i := range 2000 {
		in := Input{Warnings: rng.IntN(5), Risk: rng.Float64()}
		for range rng.IntN(30) {
			in.Events = append(in.Events, randEvent())
		}
		base := s.Score(in, now)
		if base.Score < 0 || base.Score > 100 {
			t.Fatalf("case %d: score %v out of bounds", i, base.Score)
		}

		more := in
		e := randEvent()
		more.Events = append(append([]Event(nil), in.Events...), e)
		if got := s.Score(more, now); got.Score > base.Score || got.Penalty.History < base.Penalty.History {
			t.Fatalf("case %d: adding %+v raised the score %v → %v", i, e, base, got)
		}

		older := more
		older.Events = append([]Event(nil), more.Events...)
		older.Events[len(older.Events)-1].Time = e.Time.Add(-time.Duration(rng.Int64N(int64(30 * day))))
		if got, was := s.Score(older, now), s.Score(more, now); got.Penalty.History > was.Penalty.History {
			t.Fatalf("case %d: an older event weighs more: %v → %v", i, was, got)
		}

		worse := in
		worse.Warnings++
		worse.Risk = math.Min(1, in.Risk+rng.Float64())
		if got := s.Score(worse, now); got.Score > base.Score {
			t.Fatalf("case %d: more warnings and risk raised the score %v → %v", i, base, got)
		}

		later := now.Add(time.Duration(rng.Int64N(int64(30 * day))))
		if got := s.Score(in, later); got.Score < base.Score {
			t.Fatalf("case %d: time passing lowered the score %v → %v", i, base, got)
		}
	}
}

func TestScoreHealsWithTime(t *testing.T) {
	s := newScorer(t, nil)
	in := Input{Events: []Event{{Time: now, Class: ClassReplace}}}
	var got []Tier
	for _, d := range []time.Duration{0, 7 * day, 14 * day, 90 * day} {
		got = append(got, s.Score(in, now.Add(d)).Tier)
	}
	if diff := cmp.Diff([]Tier{Bronze, Silver, Gold, Gold}, got); diff != "" {
		t.Errorf("tiers after 0, 7, 14, 90 days (-want +got):\n%s", diff)
	}
	if r := s.Score(in, now.Add(s.Horizon())); r.Penalty.History > horizonPoints*(1+1e-9) || r.Score != 100 {
		t.Errorf("at the horizon: %v", r)
	}
}

func TestScoreGPUs(t *testing.T) {
	s := newScorer(t, nil)
	in := Input{
		Events: []Event{
			{Time: now, Class: ClassResetGPU, GPU: "GPU-aaaa"},
			{Time: now.Add(-7 * day), Class: ClassReboot, GPU: "GPU-aaaa"},
			{Time: now.Add(-7 * day), Class: ClassReplace, GPU: "GPU-bbbb"},
			{Time: now, Class: ClassReboot}, // node-wide: no GPU named
		},
		Warnings: 3, Risk: 1, // node-level: not attributed to a GPU
	}
	want := map[string]Result{
		"GPU-aaaa": {80.3, Silver, Penalty{History: 22}},
		"GPU-bbbb": {81.9, Silver, Penalty{History: 20}},
	}
	if diff := cmp.Diff(want, s.ScoreGPUs(in, now), approx); diff != "" {
		t.Errorf("ScoreGPUs (-want +got):\n%s", diff)
	}
	if got := s.ScoreGPUs(Input{Events: []Event{ago(0, ClassReboot)}}, now); len(got) != 0 {
		t.Errorf("no GPU named: %v, want empty", got)
	}
}

func TestCustomWeights(t *testing.T) {
	s := newScorer(t, func(c *Config) {
		c.Weights = map[Class]float64{ClassReplace: 100} // the rest keep defaults
		c.HalfLife = day
	})
	in := Input{Events: []Event{ago(day, ClassReplace), ago(0, ClassReboot)}}
	want := Result{Score: 49.7, Tier: Bronze, Penalty: Penalty{History: 50 + 20}}
	if diff := cmp.Diff(want, s.Score(in, now), approx); diff != "" {
		t.Errorf("Score (-want +got):\n%s", diff)
	}
	if got := s.Config().Weights[ClassReboot]; got != 20 {
		t.Errorf("Config().Weights[reboot] = %v, want the default 20", got)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		mut  func(*Config)
		want []string // substrings; nil means valid
	}{
		{"defaults", func(*Config) {}, nil},
		{"no weights map uses defaults", func(c *Config) { c.Weights = nil }, nil},
		{"zero weights turn terms off", func(c *Config) {
			c.WarningWeight, c.RiskWeight, c.Hysteresis = 0, 0, 0
		}, nil},
		{"zero config", func(c *Config) { *c = Config{} }, []string{
			"HalfLife must be positive, got 0s", "GoldMin must be in (0, 100], got 0", "SilverMin must be in (0, 100], got 0",
		}},
		{"negative half-life", func(c *Config) { c.HalfLife = -time.Hour }, []string{"HalfLife must be positive, got -1h0m0s"}},
		{"bad weights", func(c *Config) {
			c.Weights = map[Class]float64{ClassReboot: -1, ClassReplace: math.NaN(), Class(42): 1}
		}, []string{"Weights[reboot] must be a finite number ≥ 0, got -1", "Weights[replace] must be a finite number ≥ 0, got NaN", "Weights: Class(42) is not a class"}},
		{"bad terms", func(c *Config) {
			c.WarningWeight, c.MaxWarningPenalty, c.RiskWeight, c.Hysteresis = -1, math.Inf(1), -0.5, -2
		}, []string{"WarningWeight must", "MaxWarningPenalty must", "RiskWeight must", "Hysteresis must"}},
		{"thresholds swapped", func(c *Config) { c.GoldMin, c.SilverMin = 70, 90 }, []string{"SilverMin (90) must be below GoldMin (70)"}},
		{"gold above 100", func(c *Config) { c.GoldMin = 101 }, []string{"GoldMin must be in (0, 100], got 101"}},
		{"hysteresis too wide", func(c *Config) { c.Hysteresis = 11 }, []string{"Hysteresis (11) must be at most half of GoldMin − SilverMin (20)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			tt.mut(&cfg)
			_, err := New(cfg)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("New: no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if n := strings.Count(err.Error(), "\n") + 1; n != len(tt.want) {
				t.Errorf("error has %d lines, want %d: %q", n, len(tt.want), err)
			}
		})
	}
}

func TestHorizon(t *testing.T) {
	if got, want := newScorer(t, nil).Horizon(), 84*day; got < want-day || got > want {
		t.Errorf("default Horizon = %v, want about %v", got, want)
	}
	zero := newScorer(t, func(c *Config) {
		for cl := range c.Weights {
			c.Weights[cl] = 0
		}
	})
	if h := zero.Horizon(); h != 0 {
		t.Errorf("Horizon with every weight 0 = %v, want 0", h)
	}
	huge := newScorer(t, func(c *Config) { c.HalfLife = math.MaxInt64 })
	if huge.Horizon() != math.MaxInt64 {
		t.Errorf("Horizon with the longest half-life = %v, want the longest duration", huge.Horizon())
	}
}

func BenchmarkScore1000Events(b *testing.B) {
	s := newScorer(b, nil)
	rng := rand.New(rand.NewPCG(3, 4))
	in := Input{Warnings: 1, Risk: 0.1}
	for range 1000 {
		in.Events = append(in.Events, Event{
			Time:  now.Add(-time.Duration(rng.Int64N(int64(90 * day)))),
			Class: Classes()[rng.IntN(numClasses-1)],
			GPU:   "GPU-" + string(rune('a'+rng.IntN(8))),
		})
	}
	b.Run("node", func(b *testing.B) {
		for b.Loop() {
			s.Score(in, now)
		}
	})
	b.Run("gpus", func(b *testing.B) {
		for b.Loop() {
			s.ScoreGPUs(in, now)
		}
	})
}
