package predict

import (
	"testing"
	"time"
)

// BenchmarkUpdateAndScore is the agent's cost per GPU per interval: one
// sample into the feature state, one score from the shipped model.
func BenchmarkUpdateAndScore(b *testing.B) {
	m, err := Default()
	if err != nil {
		b.Fatal(err)
	}
	h := randomHistory(5, 4096)
	st := NewState()
	t0 := h[0].Time
	b.ReportAllocs()
	b.ResetTimer()
	var sink float64
	for i := 0; b.Loop(); i++ {
		s := h[i%len(h)]
		s.Time = t0.Add(time.Duration(i) * Interval)
		sink += m.Score(st.Update(&s))
	}
	_ = sink
}

// BenchmarkUpdate is the feature state alone.
func BenchmarkUpdate(b *testing.B) {
	h := randomHistory(5, 4096)
	st := NewState()
	t0 := h[0].Time
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		s := h[i%len(h)]
		s.Time = t0.Add(time.Duration(i) * Interval)
		st.Update(&s)
	}
}
