package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/gpuheal/gpuheal/internal/agent/exporter"
	"github.com/gpuheal/gpuheal/internal/gpu"
	"github.com/gpuheal/gpuheal/internal/gpu/sim"
)

func newTestCollector(t *testing.T, src gpu.Source, expected int) (*collector, *exporter.Exporter) {
	t.Helper()
	exp := exporter.New(exporter.Options{})
	return &collector{
		src:          src,
		expectedGPUs: func() int { return expected },
		exp:          exp,
		log:          slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil)),
		now:          time.Now,
	}, exp
}

func TestCollectOnceFromSim(t *testing.T) {
	node, err := sim.New(sim.Options{NodeName: "n1", GPUs: 8, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	if err := node.Inject(sim.Fault{Kind: sim.KindGPUMissing, GPU: 5}); err != nil {
		t.Fatal(err)
	}
	c, exp := newTestCollector(t, node, 8)
	snap, err := c.collectOnce(context.Background(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if snap.ExpectedGPUs != 8 || snap.FoundGPUs != 7 {
		t.Fatalf("expected %d found %d, want 8 and 7", snap.ExpectedGPUs, snap.FoundGPUs)
	}
	want := `
# HELP gpuheal_node_gpus GPUs expected on the node and found by the backend.
# TYPE gpuheal_node_gpus gauge
gpuheal_node_gpus{state="expected"} 8
gpuheal_node_gpus{state="found"} 7
`
	if err := testutil.GatherAndCompare(exp.Registry(), strings.NewReader(want), "gpuheal_node_gpus"); err != nil {
		t.Fatal(err)
	}
}

// failingSource stands for a backend whose whole read fails (driver gone).
type failingSource struct{}

func (failingSource) Name() string { return "nvml" }
func (failingSource) Snapshot(context.Context) (*gpu.NodeSnapshot, error) {
	return nil, errors.New("nvml: driver not loaded")
}
func (failingSource) Close() error { return nil }

func TestCollectFailureIsVisibleInMetrics(t *testing.T) {
	c, exp := newTestCollector(t, failingSource{}, 0)
	if _, err := c.collectOnce(context.Background(), time.Second); err == nil || !strings.Contains(err.Error(), "driver not loaded") {
		t.Fatalf("err = %v", err)
	}
	want := `
# HELP gpuheal_collector_success 1 when the collector's last run succeeded.
# TYPE gpuheal_collector_success gauge
gpuheal_collector_success{collector="gpu"} 0
`
	if err := testutil.GatherAndCompare(exp.Registry(), strings.NewReader(want), "gpuheal_collector_success"); err != nil {
		t.Fatal(err)
	}
}

func TestPrintSnapshotJSONRoundTrips(t *testing.T) {
	node, err := sim.New(sim.Options{GPUs: 2, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := node.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := printSnapshot(&buf, snap, "json"); err != nil {
		t.Fatal(err)
	}
	var back gpu.NodeSnapshot
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if len(back.GPUs) != 2 || back.GPUs[1].UUID != snap.GPUs[1].UUID {
		t.Fatalf("round trip lost GPUs: %+v", back.GPUs)
	}
	buf.Reset()
	if err := printSnapshot(&buf, snap, "text"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), snap.GPUs[1].PCIBusID) {
		t.Fatalf("text output lacks GPU 1's bus id:\n%s", buf.String())
	}
}

func TestOpenSourceWithoutGPUNamesBothTries(t *testing.T) {
	o := validOptions()
	o.Backend = BackendAuto
	o.SMIPath = "/nonexistent/nvidia-smi"
	_, err := openSource(&o)
	if !errors.Is(err, ErrNoGPU) {
		t.Skipf("a GPU backend opened here (%v); the no-GPU path cannot be shown", err)
	}
	if !strings.HasPrefix(err.Error(), "no NVIDIA GPU found: nvml: ") || !strings.Contains(err.Error(), `smi: nvidia-smi not found at "/nonexistent/nvidia-smi"`) {
		t.Fatalf("err = %q", err)
	}
}
