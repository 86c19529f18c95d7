package agent

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	testclock "k8s.io/utils/clock/testing"
)

func readyz(t *testing.T, r *readiness) (int, string) {
	t.Helper()
	w := httptest.NewRecorder()
	r.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	return w.Code, w.Body.String()
}

// TestReadinessFailsAfterTheThreshold: a failure shorter than the
// threshold keeps the agent ready, a longer one does not (naming what
// fails and why), and a success makes it ready again at once.
func TestReadinessFailsAfterTheThreshold(t *testing.T) {
	for _, part := range []string{readyGPU, readyAPI} {
		clk := testclock.NewFakeClock(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
		r := newReadiness(clk, 2*time.Minute)
		if code, _ := readyz(t, r); code != http.StatusOK {
			t.Fatalf("%s: a fresh agent is not ready: %d", part, code)
		}
		down := errors.New("connection refused")
		r.observe(part, down)
		clk.Step(time.Minute)
		r.observe(part, down) // a later failure does not restart the count
		clk.Step(time.Minute)
		if code, body := readyz(t, r); code != http.StatusOK {
			t.Errorf("%s failing for exactly the threshold: %d %s, want ready", part, code, body)
		}
		clk.Step(time.Second)
		code, body := readyz(t, r)
		if code != http.StatusServiceUnavailable || !strings.Contains(body, part+" failing for 2m1s") || !strings.Contains(body, "connection refused") {
			t.Errorf("%s failing past the threshold: %d %q, want 503 naming it, the time and the error", part, code, body)
		}
		r.observe(part, nil)
		if code, body := readyz(t, r); code != http.StatusOK {
			t.Errorf("%s after a success: %d %s, want ready", part, code, body)
		}
	}
}

// TestReadyzServedBesideMetrics: the agent's HTTP server answers /readyz
// from the readiness tracker.
func TestReadyzServedBesideMetrics(t *testing.T) {
	clk := testclock.NewFakeClock(time.Now())
	r := newReadiness(clk, time.Minute)
	mux := metricsMux(http.NotFoundHandler(), r)
	r.observe(readyGPU, errNoSnapshot)
	clk.Step(2 * time.Minute)
	w := httptest.NewRecorder()
	mux.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	if w.Code != http.StatusServiceUnavailable || !strings.Contains(w.Body.String(), errNoSnapshot.Error()) {
		t.Errorf("/readyz: %d %q, want 503 with the GPU error", w.Code, w.Body.String())
	}
	w = httptest.NewRecorder()
	mux.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	if w.Code != http.StatusOK {
		t.Errorf("/healthz: %d, want 200: liveness does not follow readiness", w.Code)
	}
}
