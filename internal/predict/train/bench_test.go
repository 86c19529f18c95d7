package train

import (
	"context"
	"testing"
)

// BenchmarkTrain is training throughput on a small fleet with the
// default parameters; samples/s × 86.4 M gives the time for 1,000 GPUs ×
// 30 days (docs/predictor.md has the full-size run).
func BenchmarkTrain(b *testing.B) {
	dir := smallFleet(b, 31, 40)
	o := DefaultOptions()
	o.Traces = []string{dir}
	var samples int64
	for b.Loop() {
		_, sum, err := Train(context.Background(), o)
		if err != nil {
			b.Fatal(err)
		}
		samples += sum.Samples
	}
	b.ReportMetric(float64(samples)/b.Elapsed().Seconds(), "samples/s")
}
