package sqlite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/gpuheal/gpuheal/internal/audit"
)

func benchRecord(i int) audit.Record {
	return audit.Record{
		Key:      "gpu-" + strconv.Itoa(i%1000) + "-inc/" + strconv.Itoa(i),
		Time:     t0.Add(time.Duration(i) * time.Millisecond),
		Incident: "gpu-" + strconv.Itoa(i%1000) + "-inc" + strconv.Itoa(i/10000),
		Node:     "gpu-" + strconv.Itoa(i%1000),
		Policy:   "default", Kind: audit.Evicted, Phase: "Draining",
		Pod:     "team/worker-" + strconv.Itoa(i%64),
		Message: "evicted through the Eviction API", Severity: audit.SeverityInfo,
	}
}

// BenchmarkWrite measures sustained appends: one record per call (what the
// controller does) and batches of 100 (what Buffered does after an outage).
func BenchmarkWrite(b *testing.B) {
	for _, batch := range []int{1, 100} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			s := open(b, filepath.Join(b.TempDir(), "audit.db"))
			ctx := context.Background()
			recs := make([]audit.Record, batch)
			n := 0
			b.ResetTimer()
			for b.Loop() {
				for j := range recs {
					recs[j] = benchRecord(n)
					n++
				}
				if err := s.Write(ctx, recs...); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "records/s")
		})
	}
}

// BenchmarkMillion builds a store of 1,000,000 records (1,000 nodes) once
// and measures Query by node and a full Verify on it. Set
// GPUHEAL_AUDIT_BENCH_RECORDS to use another size.
func BenchmarkMillion(b *testing.B) {
	total := 1_000_000
	if v, err := strconv.Atoi(os.Getenv("GPUHEAL_AUDIT_BENCH_RECORDS")); err == nil && v > 0 {
		total = v
	}
	ctx := context.Background()
	s := open(b, filepath.Join(b.TempDir(), "audit.db"))
	start := time.Now()
	const batch = 5000
	recs := make([]audit.Record, 0, batch)
	for i := range total {
		recs = append(recs, benchRecord(i))
		if len(recs) == batch || i == total-1 {
			if err := s.Write(ctx, recs...); err != nil {
				b.Fatal(err)
			}
			recs = recs[:0]
		}
	}
	b.Logf("built %d records in %v (%.0f records/s)", total, time.Since(start), float64(total)/time.Since(start).Seconds())

	b.Run("QueryNode", func(b *testing.B) {
		i := 0
		for b.Loop() {
			got, err := s.Query(ctx, audit.Filter{Node: "gpu-" + strconv.Itoa(i%1000), Limit: -1})
			if err != nil || len(got) != total/1000 {
				b.Fatalf("Query = %d records, %v", len(got), err)
			}
			i += 7
		}
	})
	b.Run("QueryNodeSince", func(b *testing.B) {
		since := t0.Add(time.Duration(total/2) * time.Millisecond)
		want := min(100, total/2000)
		for b.Loop() {
			got, err := s.Query(ctx, audit.Filter{Node: "gpu-500", Since: since, Limit: 100})
			if err != nil || len(got) != want {
				b.Fatalf("Query = %d records, %v", len(got), err)
			}
		}
	})
	b.Run("Verify", func(b *testing.B) {
		for b.Loop() {
			rep, err := s.Verify(ctx)
			if err != nil || !rep.OK || rep.Records != uint64(total) {
				b.Fatalf("Verify = %v, %v", rep, err)
			}
		}
	})
}

// BenchmarkBufferedWrite is the controller's path: single records through
// audit.Buffered, which writes whatever has queued meanwhile as one batch.
// The time includes the final Flush, so this is what the store absorbs.
func BenchmarkBufferedWrite(b *testing.B) {
	s := open(b, filepath.Join(b.TempDir(), "audit.db"))
	buf, err := audit.NewBuffered(s, audit.BufferOptions{Limit: 1 << 30})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	n := 0
	start := time.Now() // b.Loop stops the timer before the Flush below
	for b.Loop() {
		if err := buf.Write(ctx, benchRecord(n)); err != nil {
			b.Fatal(err)
		}
		n++
	}
	if err := buf.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(n)/time.Since(start).Seconds(), "records/s")
	if rep, err := s.Verify(ctx); err != nil || !rep.OK || rep.Records != uint64(n) {
		b.Fatalf("Verify = %v, %v", rep, err)
	}
}
