package agent

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// DefaultReadyThreshold is Options.ReadyThreshold's default: twelve
// passes at the default interval, longer than an API server upgrade.
const DefaultReadyThreshold = 2 * time.Minute

// Parts of the agent whose failure makes it unready.
const (
	readyGPU = "gpu" // reading the GPUs
	readyAPI = "api" // writing the Node through the API server
)

// readiness answers /readyz: ready unless reading the GPUs or writing the
// Node has failed without a success for longer than threshold. A short
// failure (one hung nvidia-smi, an API server restart) is ridden out; a
// lasting one takes the pod out of Ready, where kubectl, the DaemonSet's
// rollout and alerts on kube_pod_status_ready see it. The Node is written
// only when something changes, so a silent API server is noticed at the
// next write.
type readiness struct {
	clock     clock.Clock
	threshold time.Duration

	mu      sync.Mutex
	failing map[string]failure
}

type failure struct {
	since time.Time
	last  error
}

func newReadiness(clk clock.Clock, threshold time.Duration) *readiness {
	return &readiness{clock: clk, threshold: threshold, failing: map[string]failure{}}
}

// observe records the outcome of one try of part.
func (r *readiness) observe(part string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil {
		delete(r.failing, part)
		return
	}
	f, ok := r.failing[part]
	if !ok {
		f.since = r.clock.Now()
	}
	f.last = err
	r.failing[part] = f
}

// problems says what has failed for longer than the threshold.
func (r *readiness) problems() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.clock.Now()
	var out []string
	for part, f := range r.failing {
		if d := now.Sub(f.since); d > r.threshold {
			out = append(out, fmt.Sprintf("%s failing for %v (more than --ready-threshold %v): %v", part, d.Round(time.Second), r.threshold, f.last))
		}
	}
	sort.Strings(out)
	return out
}

func (r *readiness) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if p := r.problems(); len(p) > 0 {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = fmt.Fprintln(w, strings.Join(p, "\n"))
		return
	}
	_, _ = fmt.Fprintln(w, "ok")
}
