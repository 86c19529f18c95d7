//go:build integration

package promsource_test

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuheal/gpuheal/internal/audit/jsonl"
	"github.com/gpuheal/gpuheal/internal/predict"
	"github.com/gpuheal/gpuheal/internal/predict/promsource"
	"github.com/gpuheal/gpuheal/internal/predict/promsource/promsourcetest"
	"github.com/gpuheal/gpuheal/internal/predict/trace"
)

// lookback is Prometheus' default: a series keeps answering this long
// after its last point, so the first minutes of a gap are not one.
const lookback = 5 * time.Minute

// TestBuildFromPrometheus reads a simulated history back from a real
// Prometheus in many small chunks, under a server that refuses queries
// loading more than 50,000 samples, and checks every sample and label
// against the simulation.
func TestBuildFromPrometheus(t *testing.T) {
	gap := promsourcetest.Gap{GPU: 1, From: 3 * time.Hour, To: 4 * time.Hour}
	fleet := promsourcetest.Start(t, promsourcetest.Options{GPUs: 6, GPUsPerNode: 4, Days: 0.5, Seed: 5, FailureRate: 60,
		Gaps: []promsourcetest.Gap{gap}, PrometheusArgs: []string{"--query.max-samples=50000"}})
	ctx := context.Background()
	log, err := jsonl.OpenFile(fleet.AuditJSONL, jsonl.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	step := fleet.Set.Manifest.Interval()
	o := promsource.Options{URL: fleet.URL, Start: fleet.Start, End: fleet.End.Add(-step), Step: step,
		MaxPoints: 300, MaxSamples: 20000}
	dir := t.TempDir()
	res, err := promsource.Build(ctx, dir, o, promsource.LabelOptions{}, log, fleet.AuditJSONL)
	if err != nil {
		t.Fatal(err)
	}
	tel := res.Telemetry
	t.Logf("%d GPUs, %d samples, %d gaps in %d chunks, %d queries, %d points, %.1f s",
		len(tel.Slots), tel.Samples, tel.Gaps, tel.Chunks, tel.Queries, tel.Points, tel.Seconds)
	if tel.Chunks < 5 {
		t.Errorf("%d chunks: want the 1,440 steps read in chunks of 300", tel.Chunks)
	}

	got, err := trace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	slotOf := map[string]int{}
	for _, s := range tel.Slots {
		slotOf[s.UUID] = s.GPU
	}
	if len(tel.Slots) != fleet.Set.Manifest.GPUs {
		t.Fatalf("%d GPU slots read back, want %d", len(tel.Slots), fleet.Set.Manifest.GPUs)
	}
	for gpu := range fleet.Set.Manifest.GPUs {
		slot, ok := slotOf[fleet.UUID(gpu)]
		if !ok {
			t.Fatalf("GPU %s not read back", fleet.UUID(gpu))
		}
		if tel.Slots[slot].Node != fleet.Node(gpu) {
			t.Errorf("GPU %d on node %q, want %q", gpu, tel.Slots[slot].Node, fleet.Node(gpu))
		}
		compareGPU(t, fleet, gpu, readAll(t, fleet.Set, gpu), readAll(t, got, slot))
	}

	var want []trace.Failure
	for _, f := range fleet.Set.Manifest.Failures {
		want = append(want, trace.Failure{GPU: slotOf[fleet.UUID(f.GPU)], Time: f.Time, RepairedAt: f.RepairedAt, Class: f.Class})
	}
	if len(want) == 0 {
		t.Fatal("the simulated fleet has no failure: raise the failure rate")
	}
	slices.SortFunc(want, func(a, b trace.Failure) int { return a.GPU - b.GPU })
	if diff := cmp.Diff(want, got.Manifest.Failures, cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })); diff != "" {
		t.Errorf("failure labels (-want +got):\n%s", diff)
	}
	if res.Labels.Ignored["KernelReady"] != 1 || len(res.Labels.Unmatched) != 0 {
		t.Errorf("label report %+v: want the KernelReady incident ignored and nothing unmatched", res.Labels)
	}

	for _, tc := range []struct {
		name string
		edit func(*promsource.Options)
		want []string
	}{
		// The server's limit is 50,000; one step of the NVLink counters'
		// query alone loads 48 samples.
		{"server limit", func(o *promsource.Options) { o.MaxSamples, o.MaxPoints = 0, 0 },
			[]string{fleet.URL, "gpuheal_gpu_nvlink", "too many samples"}},
		{"bad selector", func(o *promsource.Options) { o.Selector = "cluster=" }, []string{fleet.URL, "bad_data", "cluster="}},
		{"no series", func(o *promsource.Options) { o.Selector = `cluster="none"` }, []string{fleet.URL, "no series", "selector"}},
		{"no server", func(o *promsource.Options) { o.URL = "http://127.0.0.1:1" }, []string{"127.0.0.1:1", "connection refused"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := o
			tc.edit(&bad)
			_, err := promsource.Fetch(ctx, t.TempDir(), bad)
			t.Log(err)
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("err = %v, want it to mention %q", err, w)
				}
			}
		})
	}
}

// compareGPU checks every sample read back against the simulated one.
// The first sample's Xid totals are a baseline; in a gap, Prometheus
// answers from its lookback for five minutes and nothing after.
func compareGPU(t *testing.T, fleet *promsourcetest.Fleet, gpu int, want, got []predict.Sample) {
	t.Helper()
	at := map[int64]*predict.Sample{}
	for i := range got {
		at[got[i].Time.Unix()] = &got[i]
	}
	bad, xids, missing := 0, 0, 0
	defer func() {
		if xids == 0 || missing == 0 {
			t.Logf("GPU %d: %d samples compared, %d missing, %d Xids", gpu, len(want), missing, xids)
		}
	}()
	for i := range want {
		w := &want[i]
		g := at[w.Time.Unix()]
		if fleet.InGap(gpu, w.Time) {
			if g != nil && fleet.InGap(gpu, w.Time.Add(-lookback)) {
				t.Errorf("GPU %d: a sample at %s, inside a gap", gpu, w.Time)
			}
			continue
		}
		if w.Missing {
			missing++
		}
		xids += len(w.Xids)
		if g == nil {
			t.Errorf("GPU %d: no sample at %s", gpu, w.Time)
			bad++
		} else if diff := sampleDiff(w, g, i == 0); diff != "" {
			t.Errorf("GPU %d at %s (-want +got):\n%s", gpu, w.Time, diff)
			bad++
		}
		if bad > 3 {
			t.FailNow()
		}
	}
}

// sampleDiff compares what State reads: a missing GPU's other readings
// are not, nor the values of counters not read.
func sampleDiff(w, g *predict.Sample, first bool) string {
	norm := func(s *predict.Sample) predict.Sample {
		c := *s
		c.Xids = slices.Sorted(slices.Values(s.Xids))
		if first {
			c.Xids = nil
		}
		if c.Missing {
			return predict.Sample{Time: c.Time, Missing: true, Xids: c.Xids}
		}
		for k := range c.Counters {
			if c.CountersRead&(1<<k) == 0 {
				c.Counters[k] = 0
			}
		}
		return c
	}
	return cmp.Diff(norm(w), norm(g), cmp.Comparer(func(a, b float32) bool { return a == b || a != a && b != b }),
		cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) }),
		cmp.Comparer(func(a, b []uint32) bool { return slices.Equal(a, b) }))
}

func readAll(t *testing.T, set *trace.Set, gpu int) []predict.Sample {
	t.Helper()
	d, err := set.Decoder(gpu)
	if err != nil {
		t.Fatal(err)
	}
	var out []predict.Sample
	for {
		var s predict.Sample
		err := d.Next(&s)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		s.Xids = slices.Clone(s.Xids)
		out = append(out, s)
	}
}
