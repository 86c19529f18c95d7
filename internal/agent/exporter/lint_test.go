package exporter

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
)

// TestLint runs Prometheus' naming rules (units, _total on counters, help
// text) over every family: a healthy sim node plus the optional ones
// (retired pages, Xids, query errors, collectors, the RDMA fabric).
func TestLint(t *testing.T) {
	s := twoGPUSnapshot()
	s.Fabric = fabricSnapshot()
	s.GPUs = append(s.GPUs, simSnapshot(t).GPUs...)
	for i := range s.GPUs {
		s.GPUs[i].Index = i
	}
	e := New(Options{})
	e.Update(s, results)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(e)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(mfs) != len(e.d.all) {
		t.Errorf("%d families exported, want all %d described", len(mfs), len(e.d.all))
	}
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
}
