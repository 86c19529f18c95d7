package trace

import (
	"errors"
	"io"
	"testing"
	"time"

	"github.com/gpuheal/gpuheal/internal/predict"
)

// BenchmarkDecode reads one GPU-day of samples (noisy gauges, as the
// simulator writes them); samples/s is the rate training and evaluation
// stream at.
func BenchmarkDecode(b *testing.B) {
	e := NewEncoder(0, t0, 30*time.Second)
	s := predict.Sample{CountersRead: predict.AllCountersRead, NVLinkUp: 18, NVLinkTotal: 18}
	for i := range 2880 {
		s.Time = t0.Add(time.Duration(i) * 30 * time.Second)
		s.Gauges = [predict.NumGauges]float32{float32(90 + i%7), 60000, float32(60 + i%3), 66, float32(600 + i%29), 1980}
		if i%5 == 0 {
			s.Counters[predict.CounterECCCorrected]++
		}
		if err := e.Add(&s); err != nil {
			b.Fatal(err)
		}
	}
	data := e.Bytes()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		d, err := NewDecoder(data)
		if err != nil {
			b.Fatal(err)
		}
		for {
			if err := d.Next(&s); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(2880*b.N)/b.Elapsed().Seconds(), "samples/s")
}
