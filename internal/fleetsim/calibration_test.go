//go:build integration

package fleetsim

import (
	"errors"
	"io"
	"slices"
	"testing"

	"github.com/gpuheal/gpuheal/internal/predict"
	"github.com/gpuheal/gpuheal/internal/predict/trace"
)

// The calibration check simulates 200 GPUs for 10 days to count failures
// against the published rate: ~9 s under the race detector, so it runs
// with the slow suites, not in make test-unit.

func TestFailureRateAndLabels(t *testing.T) {
	// 200 GPUs × 10 days at 2 per 1,000 GPU-hours: 96 failures expected
	// (fewer: a slot in repair cannot fail).
	dir, m := write(t, Options{GPUs: 200, Days: 10, Seed: 7, FailureRate: 2})
	if n := len(m.Failures); n < 60 || n > 130 {
		t.Errorf("%d failures, want about 96", n)
	}
	set, err := trace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	classes := map[string]int{}
	withPrecursor := 0
	for _, f := range m.Failures {
		classes[f.Class]++
		if f.PrecursorStart != nil {
			withPrecursor++
		}
	}
	if len(classes) < 5 {
		t.Errorf("classes %v: want nearly all six at this count", classes)
	}
	if share := float64(withPrecursor) / float64(len(m.Failures)); share < 0.55 || share > 0.92 {
		t.Errorf("%.2f of failures with a precursor, want about 0.74", share)
	}
	for _, f := range m.Failures[:20] {
		checkFailure(t, set, f)
	}
}

// checkFailure reads one failing slot and checks the failure's own signal
// at its time and that the slot reads as missing until its repair.
func checkFailure(t *testing.T, set *trace.Set, f trace.Failure) {
	t.Helper()
	d, err := set.Decoder(f.GPU)
	if err != nil {
		t.Fatal(err)
	}
	var s, before predict.Sample
	for {
		if err := d.Next(&s); errors.Is(err, io.EOF) {
			t.Fatalf("gpu %d: trace ends before its failure at %s", f.GPU, f.Time)
		} else if err != nil {
			t.Fatal(err)
		}
		if s.Time.Equal(f.Time) {
			break
		}
		before = s
		before.Xids = slices.Clone(s.Xids)
	}
	want := map[string]uint32{"hbm-dbe": 48, "row-remap-exhaustion": 64, "gsp-hang": 119, "fell-off-bus": 79, "nvlink-down": 74}[f.Class]
	if want != 0 && !slices.Contains(s.Xids, want) {
		t.Errorf("gpu %d %s failure at %s: Xids %v, want %d", f.GPU, f.Class, f.Time, s.Xids, want)
	}
	if f.Class == "thermal" && (before.ClockEventReasons&clockSWTherm == 0) && f.PrecursorStart != nil {
		t.Errorf("gpu %d thermal failure with a precursor: no thermal slowdown just before", f.GPU)
	}
	for {
		if err := d.Next(&s); err != nil || !s.Time.Before(f.RepairedAt) {
			break
		}
		if !s.Missing {
			t.Fatalf("gpu %d at %s: answers between its failure and its repair at %s", f.GPU, s.Time, f.RepairedAt)
		}
	}
}
