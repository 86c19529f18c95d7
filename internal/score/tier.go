package score

import (
	"fmt"
	"math"
)

// Tier is the coarse grade published as the label gpuheal.io/health-tier,
// for node affinity. The empty Tier means "none yet".
type Tier string

// The tiers, best first.
const (
	Gold   Tier = "gold"
	Silver Tier = "silver"
	Bronze Tier = "bronze"
)

// ParseTier reads a label value; anything else is an error, so a label
// edited by hand does not pass for a previous tier.
func ParseTier(s string) (Tier, error) {
	switch t := Tier(s); t {
	case Gold, Silver, Bronze:
		return t, nil
	}
	return "", fmt.Errorf("tier %q: want gold, silver or bronze", s)
}

// Tier grades a score with the configured thresholds, without hysteresis.
func (s *Scorer) Tier(score float64) Tier {
	switch {
	case score >= s.cfg.GoldMin:
		return Gold
	case score >= s.cfg.SilverMin:
		return Silver
	}
	return Bronze
}

// TierWithHysteresis grades a score given the tier published before: the
// previous tier is kept while the score stays within Config.Hysteresis
// points of its band, so a node hovering at a threshold does not relabel
// (and reschedule pods' preferences) every evaluation. A score further out
// gets its plain tier, however far it moved. An empty or unknown prev
// means no hysteresis.
func (s *Scorer) TierWithHysteresis(prev Tier, score float64) Tier {
	plain := s.Tier(score)
	m := s.cfg.Hysteresis
	if m == 0 || plain == prev {
		return plain
	}
	lo, hi := math.Inf(-1), math.Inf(1)
	switch prev {
	case Gold:
		lo = s.cfg.GoldMin
	case Silver:
		lo, hi = s.cfg.SilverMin, s.cfg.GoldMin
	case Bronze:
		hi = s.cfg.SilverMin
	default:
		return plain
	}
	if score >= lo-m && score < hi+m {
		return prev
	}
	return plain
}
