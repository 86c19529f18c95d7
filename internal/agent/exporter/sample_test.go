package exporter

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	"github.com/gpuheal/gpuheal/internal/gpu/sim"
)

// TestSampleWritesWhatConstMetricWrites: for every series of an 8-GPU
// node with faults (extra labels, Xid counters, NVLink), the sample Collect
// sends writes the same metric as client_golang's MustNewConstMetric.
func TestSampleWritesWhatConstMetricWrites(t *testing.T) {
	e := New(Options{})
	e.Update(simSnapshot(t, sim.Fault{Kind: sim.KindXid, GPU: 2, Params: map[string]string{"code": "79"}}, sim.Fault{Kind: sim.KindRowRemapPending, GPU: 4}), results)
	r := e.metrics.Load()
	if len(r.series) < 1000 {
		t.Fatalf("%d series rendered, want the ~1,000 of an 8-GPU node", len(r.series))
	}
	for i := range r.series {
		s := &r.series[i]
		lv := r.labels[s.off : s.off+uint32(s.n)]
		var want, got dto.Metric
		if err := prometheus.MustNewConstMetric(s.d, s.t, s.v, lv...).Write(&want); err != nil {
			t.Fatal(err)
		}
		if err := (sample{s: s, values: lv, names: e.d.labels[s.d]}).Write(&got); err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(&want, &got) {
			t.Fatalf("%s:\nconst metric %v\nsample       %v", s.d, &want, &got)
		}
	}
}

func TestSampleRefusesValuesThatDoNotFitItsLabels(t *testing.T) {
	d := newDescs()
	s := &series{d: d.eccErrors, t: prometheus.CounterValue, v: 1}
	err := sample{s: s, values: []string{"0"}, names: d.labels[d.eccErrors]}.Write(&dto.Metric{})
	if err == nil {
		t.Fatal("one label value for its six label names was accepted")
	}
}
