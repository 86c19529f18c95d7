package fleetsim

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gpuheal/gpuheal/internal/predict"
	"github.com/gpuheal/gpuheal/internal/predict/trace"
)

func write(t *testing.T, o Options) (string, *trace.Manifest) {
	t.Helper()
	dir := t.TempDir()
	m, err := Write(context.Background(), dir, o)
	if err != nil {
		t.Fatal(err)
	}
	return dir, m
}

func TestSameSeedSameBytes(t *testing.T) {
	o := Options{GPUs: 12, Days: 2, Seed: 42, FailureRate: 20}
	a, _ := write(t, Options{GPUs: o.GPUs, Days: o.Days, Seed: o.Seed, FailureRate: o.FailureRate, Workers: 1})
	b, _ := write(t, Options{GPUs: o.GPUs, Days: o.Days, Seed: o.Seed, FailureRate: o.FailureRate, Workers: 3})
	c, _ := write(t, Options{GPUs: o.GPUs, Days: o.Days, Seed: o.Seed + 1, FailureRate: o.FailureRate})
	names, _ := filepath.Glob(filepath.Join(a, "*"))
	if len(names) != o.GPUs+1 {
		t.Fatalf("%d files, want %d GPU files and the manifest", len(names), o.GPUs)
	}
	differs := false
	for _, n := range names {
		x, _ := os.ReadFile(n)
		y, _ := os.ReadFile(filepath.Join(b, filepath.Base(n)))
		z, _ := os.ReadFile(filepath.Join(c, filepath.Base(n)))
		if !bytes.Equal(x, y) {
			t.Errorf("%s differs between 1 and 3 workers with the same seed", filepath.Base(n))
		}
		differs = differs || !bytes.Equal(x, z)
	}
	if !differs {
		t.Error("seeds 42 and 43 gave identical traces")
	}
}

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

func TestPresets(t *testing.T) {
	for _, name := range PresetNames() {
		p, err := LookupPreset(name)
		if err != nil {
			t.Fatal(err)
		}
		var share, silent float64
		for _, c := range p.Classes {
			share += c.Share
			silent += c.Share * (1 - c.PrecursorProbability)
		}
		if share < 0.999 || share > 1.001 {
			t.Errorf("%s: class shares sum to %v", name, share)
		}
		if silent < 0.2 || silent > 0.3 {
			t.Errorf("%s: %.2f of failures without precursor, docs say about 0.26", name, silent)
		}
	}
	if p, _ := LookupPreset("llama3"); p.FailuresPer1000GPUHours < 0.0197 || p.FailuresPer1000GPUHours > 0.0198 {
		t.Errorf("llama3 rate %v, want 419/(16384×54×24)×1000 ≈ 0.0197", p.FailuresPer1000GPUHours)
	}
	if _, err := LookupPreset("nope"); err == nil {
		t.Error("unknown preset accepted")
	}
	if _, err := Write(context.Background(), t.TempDir(), Options{GPUs: 0, Days: 1}); err == nil {
		t.Error("0 GPUs accepted")
	}
}
