package fleetsim

import (
	"context"
	"testing"
)

// BenchmarkGenerate simulates and writes 10 GPUs × 3 days.
func BenchmarkGenerate(b *testing.B) {
	dir := b.TempDir()
	for b.Loop() {
		if _, err := Write(context.Background(), dir, Options{GPUs: 10, Days: 3, Seed: 1, Workers: 1}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(10*3*2880*b.N)/b.Elapsed().Seconds(), "samples/s")
}
