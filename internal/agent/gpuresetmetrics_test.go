package agent

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
)

// The reset metrics follow Prometheus' naming rules and count by outcome
// and reason; only resets the agent ran are timed.
func TestResetMetrics(t *testing.T) {
	m := newResetMetrics()
	m.observe(&v1alpha1.GPUResetReport{Outcome: v1alpha1.GPUResetSucceeded}, 3*time.Second)
	m.observe(&v1alpha1.GPUResetReport{Outcome: v1alpha1.GPUResetFailed, Reason: v1alpha1.ResetReasonInterrupted}, 0)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
	if v := testutil.ToFloat64(m.total.WithLabelValues(v1alpha1.GPUResetFailed, v1alpha1.ResetReasonInterrupted)); v != 1 {
		t.Errorf("interrupted resets %v, want 1", v)
	}
	for _, mf := range mfs {
		if mf.GetName() == "gpuheal_agent_gpu_reset_duration_seconds" {
			if n := mf.GetMetric()[0].GetHistogram().GetSampleCount(); n != 1 {
				t.Errorf("%d resets timed, want 1 (the one the agent ran)", n)
			}
		}
	}
}
