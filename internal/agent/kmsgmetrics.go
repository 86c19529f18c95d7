package agent

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpuheal/gpuheal/internal/finding"
)

// kmsgMetrics exports what the kernel-log monitor found and how reading
// went: findings by code and severity, and the reader's loss counters (a
// rising gpuheal_kmsg_lost_records_total means the ring overwrote records
// before the agent read them).
type kmsgMetrics struct {
	findings *prometheus.CounterVec
	mon      *kmsgMonitor
	records  *prometheus.Desc
	lost     *prometheus.Desc
	skipped  *prometheus.Desc
}

func newKmsgMetrics(mon *kmsgMonitor) *kmsgMetrics {
	return &kmsgMetrics{
		findings: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpuheal_findings_total",
			Help: "Problems found in the kernel log, by code (XID79, SXID, PCIE_AER, SOFT_LOCKUP, ...) and severity.",
		}, []string{"code", "severity"}),
		mon:     mon,
		records: prometheus.NewDesc("gpuheal_kmsg_records_total", "Kernel-log records read.", nil, nil),
		lost:    prometheus.NewDesc("gpuheal_kmsg_lost_records_total", "Kernel-log records the ring buffer overwrote before the agent read them.", nil, nil),
		skipped: prometheus.NewDesc("gpuheal_kmsg_skipped_lines_total", "Kernel-log lines skipped as unparsable, too long or garbage.", nil, nil),
	}
}

func (k *kmsgMetrics) observe(f finding.Finding) {
	k.findings.WithLabelValues(f.Code, string(f.Severity)).Inc()
}

func (k *kmsgMetrics) Describe(ch chan<- *prometheus.Desc) {
	k.findings.Describe(ch)
	ch <- k.records
	ch <- k.lost
	ch <- k.skipped
}

func (k *kmsgMetrics) Collect(ch chan<- prometheus.Metric) {
	k.findings.Collect(ch)
	s := k.mon.Stats()
	ch <- prometheus.MustNewConstMetric(k.records, prometheus.CounterValue, float64(s.Records))
	ch <- prometheus.MustNewConstMetric(k.lost, prometheus.CounterValue, float64(s.Lost))
	ch <- prometheus.MustNewConstMetric(k.skipped, prometheus.CounterValue, float64(s.Skipped+s.TooLong))
}
