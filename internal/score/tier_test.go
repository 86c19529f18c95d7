package score

import "testing"

func TestTier(t *testing.T) {
	s := newScorer(t, nil)
	for score, want := range map[float64]Tier{
		100: Gold, 90: Gold, 89.9: Silver, 70: Silver, 69.9: Bronze, 0: Bronze,
	} {
		if got := s.Tier(score); got != want {
			t.Errorf("Tier(%v) = %s, want %s", score, got, want)
		}
	}
}

func TestTierWithHysteresis(t *testing.T) {
	s := newScorer(t, nil) // gold ≥ 90, silver ≥ 70, margin 2
	tests := []struct {
		prev  Tier
		score float64
		want  Tier
	}{
		{"", 89, Silver},
		{"platinum", 89, Silver},
		{Gold, 95, Gold},
		{Gold, 88.1, Gold}, // within 2 of gold's floor
		{Gold, 88, Gold},
		{Gold, 87.9, Silver},
		{Gold, 60, Bronze}, // a fall further than the margin is not softened
		{Silver, 91.9, Silver},
		{Silver, 92, Gold},
		{Silver, 68, Silver},
		{Silver, 67.9, Bronze},
		{Bronze, 71.9, Bronze},
		{Bronze, 72, Silver},
		{Bronze, 99, Gold},
	}
	for _, tt := range tests {
		if got := s.TierWithHysteresis(tt.prev, tt.score); got != tt.want {
			t.Errorf("TierWithHysteresis(%q, %v) = %s, want %s", tt.prev, tt.score, got, tt.want)
		}
	}

	// A score wobbling around the gold floor keeps one label.
	prev := Gold
	for i, score := range []float64{89.5, 90.2, 88.4, 90.9, 89.1} {
		if prev = s.TierWithHysteresis(prev, score); prev != Gold {
			t.Fatalf("step %d (%v): tier %s, want gold kept", i, score, prev)
		}
	}

	off := newScorer(t, func(c *Config) { c.Hysteresis = 0 })
	if got := off.TierWithHysteresis(Gold, 89.9); got != Silver {
		t.Errorf("without hysteresis: %s, want silver", got)
	}
}

func TestParseTier(t *testing.T) {
	for _, tier := range []Tier{Gold, Silver, Bronze} {
		if got, err := ParseTier(string(tier)); got != tier || err != nil {
			t.Errorf("ParseTier(%q) = %q, %v", tier, got, err)
		}
	}
	if got, err := ParseTier("Gold"); got != "" || err == nil {
		t.Errorf("ParseTier(Gold) = %q, %v; want an error", got, err)
	}
}
