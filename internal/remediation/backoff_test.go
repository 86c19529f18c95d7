package remediation

import (
	"testing"
	"time"
)

func TestProviderBackoffGrowsToItsBound(t *testing.T) {
	poll := 2 * time.Second
	want := []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second,
		160 * time.Second, maxProviderBackoff, maxProviderBackoff}
	var total time.Duration
	for i, w := range want {
		got := providerBackoff(poll, i+1)
		if got != w {
			t.Errorf("backoff after failure %d = %s, want %s", i+1, got, w)
		}
		total += got
	}
	// The calls before the incident fails span this long: minutes of
	// outage are ridden out.
	if total < 10*time.Minute {
		t.Errorf("the %d failed calls span %s, want at least 10m", maxProviderErrors, total)
	}
}
