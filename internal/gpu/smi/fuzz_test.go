package smi

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse guards Parse against hostile or corrupt input: `gpuheal
// diagnose` parses dumps from anywhere. The seeds are 18-46 KB, and Go
// minimizes every new interesting input for up to -fuzzminimizetime (60s by
// default), which with inputs this large can swallow a short run; add
// -fuzzminimizetime=50x to spend the time fuzzing instead.
func FuzzParse(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.xml"))
	if err != nil || len(files) == 0 {
		f.Fatalf("no seed fixtures: %v", err)
	}
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(oneGPU(`<clocks_event_reasons>N/A</clocks_event_reasons><remapped_rows>[Unknown Error]</remapped_rows>`)))
	f.Add([]byte("No devices were found\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		snap, err := Parse(bytes.NewReader(data))
		if err != nil {
			return
		}
		if snap.Backend != BackendName {
			t.Errorf("Backend = %q", snap.Backend)
		}
		if snap.FoundGPUs < len(snap.GPUs) {
			t.Errorf("FoundGPUs = %d with %d GPUs described", snap.FoundGPUs, len(snap.GPUs))
		}
		for i, g := range snap.GPUs {
			if g.Index != i {
				t.Errorf("GPU %d has Index %d", i, g.Index)
			}
		}
	})
}

func BenchmarkParseA100(b *testing.B) {
	data, err := os.ReadFile(filepath.Join("testdata", "a100-sxm4-v12.xml"))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
}
