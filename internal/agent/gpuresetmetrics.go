package agent

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
)

// resetMetrics count the agent's GPU resets (docs/metrics.md).
type resetMetrics struct {
	total    *prometheus.CounterVec
	duration prometheus.Histogram
	// onChange tells the exporter its cached encoding is stale.
	onChange func()
}

func newResetMetrics() *resetMetrics {
	return &resetMetrics{
		total: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpuheal_agent_gpu_resets_total",
			Help: "GPU reset requests the agent answered, by outcome (Succeeded, Failed) and failure reason (empty on success).",
		}, []string{"outcome", "reason"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "gpuheal_agent_gpu_reset_duration_seconds",
			Help:    "Time from taking a GPU reset request to its answer, for requests the agent ran.",
			Buckets: []float64{0.1, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 180},
		}),
	}
}

// observe counts one answer; took is 0 for one the agent did not run
// (refused, or interrupted by a restart).
func (m *resetMetrics) observe(r *v1alpha1.GPUResetReport, took time.Duration) {
	m.total.WithLabelValues(r.Outcome, r.Reason).Inc()
	if took > 0 {
		m.duration.Observe(took.Seconds())
	}
	if m.onChange != nil {
		m.onChange()
	}
}

func (m *resetMetrics) Describe(ch chan<- *prometheus.Desc) {
	m.total.Describe(ch)
	m.duration.Describe(ch)
}

func (m *resetMetrics) Collect(ch chan<- prometheus.Metric) {
	m.total.Collect(ch)
	m.duration.Collect(ch)
}
