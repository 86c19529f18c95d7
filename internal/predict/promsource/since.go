package promsource

import (
	"fmt"
	"time"

	"github.com/prometheus/common/model"
)

// ParseTime reads a --since or --until value: a Prometheus duration
// back from now ("30d", "1w", "36h", "1d12h"), or an RFC 3339 time
// ("2026-01-01T00:00:00Z").
func ParseTime(s string, now time.Time) (time.Time, error) {
	if d, err := model.ParseDuration(s); err == nil {
		if d <= 0 {
			return time.Time{}, fmt.Errorf("%q: want a duration above zero", s)
		}
		return now.Add(-time.Duration(d)), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q: want a duration back from now (30d, 12h, 1w) or an RFC 3339 time", s)
	}
	return t, nil
}
