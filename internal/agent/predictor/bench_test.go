package predictor

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/gpuheal/gpuheal/internal/gpu"
	"github.com/gpuheal/gpuheal/internal/gpu/sim"
	"github.com/gpuheal/gpuheal/internal/predict"
)

// benchSnapshots are 64 consecutive snapshots of an 8-GPU sim node with
// noisy gauges; GPU 2 has a corrected-ECC and PCIe replay burst.
func benchSnapshots(b *testing.B) []*gpu.NodeSnapshot {
	b.Helper()
	clk := clocktesting.NewFakeClock(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))
	node, err := sim.New(sim.Options{GPUs: 8, Seed: 1, Clock: clk})
	if err != nil {
		b.Fatal(err)
	}
	out := make([]*gpu.NodeSnapshot, 64)
	for i := range out {
		for _, f := range burst(2, i) {
			if err := node.Inject(f); err != nil {
				b.Fatal(err)
			}
		}
		if out[i], err = node.Snapshot(context.Background()); err != nil {
			b.Fatal(err)
		}
		clk.Step(predict.Interval)
	}
	return out
}

// BenchmarkAgentPredict8GPU is the predictor's cost per collection
// interval on an 8-GPU node: samples, feature updates and scores for every
// GPU, the Xid merge and the alarm check.
func BenchmarkAgentPredict8GPU(b *testing.B) {
	benchPredict(b, false)
}

// BenchmarkAgentPredictMetrics8GPU adds rendering the predictor's series,
// as each exporter update does.
func BenchmarkAgentPredictMetrics8GPU(b *testing.B) {
	benchPredict(b, true)
}

func benchPredict(b *testing.B, collect bool) {
	p := New(defaultPredictorModel(b), predict.Interval, slog.New(slog.DiscardHandler))
	p.Publish = func(float64, []Alarm) {}
	m := newPredictMetrics(p)
	ch := make(chan prometheus.Metric, 16)
	snaps := benchSnapshots(b)
	start := snaps[0].Time
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		s := snaps[i%len(snaps)]
		s.Time = start.Add(time.Duration(i) * predict.Interval)
		p.Observe(s)
		if collect {
			m.Collect(ch) // 8 risks, threshold, info: fits the buffer
			for len(ch) > 0 {
				<-ch
			}
		}
		i++
	}
}
