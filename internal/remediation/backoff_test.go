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
		got := providerBackoff(poll, i+1, "gpu-a-1")
		if hi := w + time.Duration(providerJitter*float64(w)); got < w || got > hi {
			t.Errorf("backoff after failure %d = %s, want within [%s, %s]", i+1, got, w, hi)
		}
		if again := providerBackoff(poll, i+1, "gpu-a-1"); again != got {
			t.Errorf("backoff after failure %d = %s, then %s: every reconcile must compute the same wait", i+1, got, again)
		}
		total += got
	}
	// The calls before the incident fails span this long: minutes of
	// outage are ridden out.
	if total < 10*time.Minute {
		t.Errorf("the %d failed calls span %s, want at least 10m", maxProviderErrors, total)
	}
}

// TestProviderBackoffIsJittered: incidents whose calls failed together do
// not call again in step.
func TestProviderBackoffIsJittered(t *testing.T) {
	seen := map[time.Duration]bool{}
	for _, inc := range []string{"gpu-a-1", "gpu-b-1", "gpu-c-1", "gpu-d-1", "gpu-e-1", "gpu-f-1", "gpu-g-1", "gpu-h-1"} {
		seen[providerBackoff(2*time.Second, 3, inc)] = true
	}
	if len(seen) < 4 {
		t.Errorf("8 incidents got %d distinct waits after their third failure, want them spread", len(seen))
	}
}
