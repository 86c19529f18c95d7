package exporter

import (
	"bytes"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"

	"github.com/gpuheal/gpuheal/internal/gpu"
	"github.com/gpuheal/gpuheal/internal/gpu/sim"
)

var update = flag.Bool("update", false, "rewrite testdata/*.prom from the current output")

var results = []CollectorResult{
	{Name: "gpu", Success: true, Duration: 250 * time.Millisecond},
	{Name: "host", Success: false, Duration: 3 * time.Millisecond},
}

// TestCollectGolden compares the whole exposition, so any series that
// should have been skipped (a nil reading) fails the test as surely as a
// wrong value. Review a diff of testdata after running with -update.
func TestCollectGolden(t *testing.T) {
	lost := hopper()
	lost = gpu.GPUSnapshot{Index: lost.Index, UUID: lost.UUID, PCIBusID: lost.PCIBusID, Name: lost.Name,
		Serial: lost.Serial, VBIOS: lost.VBIOS, Missing: true, XidTotals: map[uint64]uint64{79: 1},
		Errors: []gpu.QueryError{{Query: "device handle", Message: "GPU is lost"}}}
	tests := []struct {
		name    string
		snap    *gpu.NodeSnapshot
		results []CollectorResult
	}{
		{name: "two_gpus", snap: twoGPUSnapshot(), results: results},
		{name: "missing_gpu", snap: &gpu.NodeSnapshot{Time: snapTime, Backend: "nvml", FoundGPUs: 1,
			DriverVersion: "570.133.20", GPUs: []gpu.GPUSnapshot{lost}}},
		{name: "backend_failed", results: []CollectorResult{{Name: "gpu", Duration: 5 * time.Second}}},
		{name: "empty_snapshot", snap: &gpu.NodeSnapshot{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := New(Options{})
			e.Update(tt.snap, tt.results)
			golden := filepath.Join("testdata", tt.name+".prom")
			if *update {
				writeGolden(t, golden, e)
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if err := testutil.CollectAndCompare(e, bytes.NewReader(want)); err != nil {
				t.Error(err)
			}
		})
	}
}

func writeGolden(t *testing.T, path string, c prometheus.Collector) {
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(&buf, mf); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// An 8-GPU H100 sim node; docs/metrics.md quotes these counts, so a
// change here must change the doc too.
func TestSeriesCount8GPU(t *testing.T) {
	const healthy = 1063
	e := New(Options{})
	e.Update(simSnapshot(t), nil)
	if got := testutil.CollectAndCount(e); got != healthy {
		t.Errorf("healthy node: %d series, want %d", got, healthy)
	}
	for name, want := range map[string]int{
		"gpuheal_gpu_nvlink_up":           8 * 18,
		"gpuheal_gpu_nvlink_errors_total": 8 * 18 * 4,
		"gpuheal_gpu_clock_event_active":  8 * len(clockReasons),
		"gpuheal_gpu_xid_errors_total":    0,
		"gpuheal_gpu_retired_pages":       0, // H100 remaps rows instead
	} {
		if got := testutil.CollectAndCount(e, name); got != want {
			t.Errorf("%s: %d series, want %d", name, got, want)
		}
	}

	// Each collector adds two series; an Xid adds one per code.
	e.Update(simSnapshot(t, sim.Fault{Kind: sim.KindXid, GPU: 3, Params: map[string]string{"code": "13"}}),
		[]CollectorResult{{Name: "gpu"}, {Name: "host"}, {Name: "kmsg"}})
	if got, want := testutil.CollectAndCount(e), healthy+3*2+1; got != want {
		t.Errorf("with collectors and an Xid: %d series, want %d", got, want)
	}
}

func TestQueryErrorsAccumulate(t *testing.T) {
	e := New(Options{})
	e.Update(twoGPUSnapshot(), nil)
	e.Update(twoGPUSnapshot(), nil)
	healthy := twoGPUSnapshot()
	healthy.Errors, healthy.GPUs[1].Errors = nil, nil
	e.Update(healthy, nil)
	e.Update(nil, nil) // a failed backend keeps the totals
	want := `
# HELP gpuheal_gpu_query_errors_total Failed or timed-out GPU queries since the agent started; node-level ones have gpu="".
# TYPE gpuheal_gpu_query_errors_total counter
gpuheal_gpu_query_errors_total{gpu="",model="",pci_bus_id="",query="kernel-release",uuid=""} 2
gpuheal_gpu_query_errors_total{gpu="1",model="Tesla V100-SXM2-32GB",pci_bus_id="0000:2a:00.0",query="GetTemperature",uuid="GPU-bbbb"} 2
`
	if err := testutil.CollectAndCompare(e, strings.NewReader(want), "gpuheal_gpu_query_errors_total"); err != nil {
		t.Error(err)
	}
}

func TestNoSnapshotYet(t *testing.T) {
	e := New(Options{})
	if got := testutil.CollectAndCount(e); got != 0 {
		t.Errorf("before the first Update: %d series, want 0", got)
	}
	rec := httptest.NewRecorder()
	e.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Errorf("scrape before the first Update: status %d", rec.Code)
	}
}

// Update renders at once, so the agent may reuse or change its snapshot.
func TestUpdateDoesNotKeepSnapshot(t *testing.T) {
	s := twoGPUSnapshot()
	e := New(Options{})
	e.Update(s, nil)
	s.GPUs[0].TemperatureCelsius = gpu.F64(20)
	s.GPUs = nil
	want := `
# HELP gpuheal_gpu_temperature_celsius GPU core temperature.
# TYPE gpuheal_gpu_temperature_celsius gauge
gpuheal_gpu_temperature_celsius{gpu="0",model="NVIDIA H100 80GB HBM3",pci_bus_id="0000:18:00.0",uuid="GPU-aaaa"} 91
`
	if err := testutil.CollectAndCompare(e, strings.NewReader(want), "gpuheal_gpu_temperature_celsius"); err != nil {
		t.Error(err)
	}
}

// Hardware strings are not trusted to be UTF-8; client_golang would panic
// on them.
func TestInvalidUTF8Label(t *testing.T) {
	s := twoGPUSnapshot()
	s.GPUs[0].Serial = "bad\xff"
	s.DriverVersion = "\xfe"
	e := New(Options{})
	e.Update(s, nil)
	if got := testutil.CollectAndCount(e, "gpuheal_gpu_info"); got != 2 {
		t.Errorf("gpuheal_gpu_info: %d series, want 2", got)
	}
}

func TestRuntimeMetricsOption(t *testing.T) {
	for _, on := range []bool{false, true} {
		e := New(Options{RuntimeMetrics: on})
		e.Update(twoGPUSnapshot(), results)
		rec := httptest.NewRecorder()
		e.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		body := rec.Body.String()
		if !strings.Contains(body, "gpuheal_gpu_temperature_celsius{") {
			t.Errorf("RuntimeMetrics=%v: no GPU temperature in\n%s", on, body)
		}
		if got := strings.Contains(body, "go_goroutines") && strings.Contains(body, "process_start_time_seconds"); got != on {
			t.Errorf("RuntimeMetrics=%v: go_/process_ metrics present = %v", on, got)
		}
	}
}

// Scrapes racing with Updates must each see one whole snapshot; run with
// -race to make this test meaningful.
func TestConcurrentScrapeAndUpdate(t *testing.T) {
	e := New(Options{})
	snap := simSnapshot(t)
	e.Update(snap, results)
	want := testutil.CollectAndCount(e)
	var wg sync.WaitGroup
	wg.Go(func() {
		for range 50 {
			e.Update(snap, results)
		}
	})
	for range 20 {
		if got := testutil.CollectAndCount(e); got != want {
			t.Errorf("scrape during Update: %d series, want %d", got, want)
		}
	}
	wg.Wait()
}
