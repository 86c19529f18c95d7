package fleetsim

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

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
