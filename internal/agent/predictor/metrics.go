package predictor

import (
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics returns the collector of the predictor's series, for the
// agent's registry.
func (p *Predictor) Metrics() prometheus.Collector { return newPredictMetrics(p) }

// predictMetrics exports the predictor's last risks with the labels of
// the exporter's per-GPU series, so they join onto them, plus the model
// and threshold in effect: an alert can compare the two
// (gpuheal_gpu_failure_risk >= on() group_left gpuheal_predictor_threshold).
type predictMetrics struct {
	p                     *Predictor
	risk, threshold, info *prometheus.Desc
}

func newPredictMetrics(p *Predictor) *predictMetrics {
	return &predictMetrics{
		p: p,
		risk: prometheus.NewDesc("gpuheal_gpu_failure_risk",
			"Predicted risk (0-1) that the GPU fails within the model's horizon (30 min for the shipped model).",
			[]string{"gpu", "uuid", "pci_bus_id", "model"}, nil),
		threshold: prometheus.NewDesc("gpuheal_predictor_threshold",
			"Risk at or above which the agent warns that a GPU may fail (the model's, or --predictor-threshold).", nil, nil),
		info: prometheus.NewDesc("gpuheal_predictor_model_info",
			"Always 1: the failure model in use, by source (embedded or the file) and the first 12 hex digits of its SHA-256.",
			[]string{"source", "sha256", "feature_set"}, nil),
	}
}

func (m *predictMetrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.risk
	ch <- m.threshold
	ch <- m.info
}

func (m *predictMetrics) Collect(ch chan<- prometheus.Metric) {
	for _, r := range m.p.lastRisks() {
		ch <- prometheus.MustNewConstMetric(m.risk, prometheus.GaugeValue, r.risk, r.gpu, r.uuid, r.bus, r.model)
	}
	pm := m.p.pm
	ch <- prometheus.MustNewConstMetric(m.threshold, prometheus.GaugeValue, pm.threshold)
	ch <- prometheus.MustNewConstMetric(m.info, prometheus.GaugeValue, 1,
		labelValue(pm.source), pm.digest, strconv.Itoa(pm.model.File().FeatureSet))
}

// labelValue makes a hardware string safe as a label value: client_golang
// panics on invalid UTF-8 (the exporter does the same).
func labelValue(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }
