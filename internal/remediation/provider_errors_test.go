package remediation

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/provider/kwok"
)

// TestProviderOutageDelaysTheRepair: the cloud API fails every call for a
// while. The controller retries with growing waits and, once the API is
// back, finishes the same incident: an outage of seconds must not fail it
// (which leaves the node cordoned for an operator, and a second incident
// would then repeat the repair).
func TestProviderOutageDelaysTheRepair(t *testing.T) {
	h := newHarness(t, "outage", 1)
	h.create(fastPolicy("outage", "outage"))
	chaos := filepath.Join(t.TempDir(), "chaos")
	if err := os.WriteFile(chaos, []byte(kwok.ChaosFail), 0o644); err != nil {
		t.Fatal(err)
	}
	h.startController(controllerConfig{kwok: kwok.Options{ChaosFile: chaos}})
	node := h.nodes[0]
	h.breakGPU(node, "reboot")

	const outageErrors = 4
	var errs []v1alpha1.ProviderRequest
	h.waitFor("provider errors during the outage", time.Minute, func() (bool, error) {
		errs = nil
		for _, nr := range h.incidents(node) {
			if nr.Status.Phase == v1alpha1.PhaseFailed {
				t.Fatalf("incident %s failed during a %d-call outage: %s", nr.Name, outageErrors, nr.Status.Reason)
			}
			for _, req := range nr.Status.ProviderRequests {
				if req.Error != "" {
					errs = append(errs, req)
				}
			}
		}
		return len(errs) >= outageErrors, nil
	})
	if err := os.Remove(chaos); err != nil {
		t.Fatal(err)
	}
	nr := h.waitPhase(node, v1alpha1.PhaseSucceeded, time.Minute)

	if n := len(h.incidents(node)); n != 1 {
		t.Errorf("%d incidents for one fault, want 1", n)
	}
	var failed, ok int
	for _, req := range nr.Status.ProviderRequests {
		if req.Error != "" {
			failed++
		} else {
			ok++
		}
	}
	if ok != 1 || failed < outageErrors || failed >= maxProviderErrors {
		t.Errorf("provider requests: %d successful, %d failed; want 1 and %d..%d", ok, failed, outageErrors, maxProviderErrors-1)
	}
	// The waits grow: 1 s, 2 s, 4 s with the tests' 200 ms poll. Recorded
	// times have whole seconds, so allow one second less.
	if gap := errs[3].Time.Sub(errs[2].Time.Time); gap < 3*time.Second {
		t.Errorf("third to fourth failed call %s apart, want the 4 s backoff", gap)
	}
}

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
