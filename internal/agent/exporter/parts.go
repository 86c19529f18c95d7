package exporter

import "github.com/prometheus/client_golang/prometheus"

// part is one of the exporter's two registries' view of its series: the
// fabric's gpuheal_fabric_* families, or all the others. The scrape cache
// gathers and encodes one registry after the other, so the transient
// protobuf form of a gather (a few hundred bytes a series, garbage once
// encoded) peaks at the larger part instead of at their sum: a p5's 32
// EFA devices are ~900 series next to the GPUs' ~1,000
// (docs/benchmarks.md). The Exporter itself still collects both.
type part struct {
	e      *Exporter
	fabric bool
}

func (p part) Describe(ch chan<- *prometheus.Desc) {
	descs := p.e.d.nodeAll
	if p.fabric {
		descs = p.e.d.fabricAll
	}
	for _, d := range descs {
		ch <- d
	}
}

func (p part) Collect(ch chan<- prometheus.Metric) {
	if p.fabric {
		p.e.send(ch, p.e.fabric.Load())
		return
	}
	p.e.send(ch, p.e.metrics.Load())
}
