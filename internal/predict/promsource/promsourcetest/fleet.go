// Package promsourcetest loads a simulated fleet's history into a real
// Prometheus — the agent's metrics with timestamps, backfilled with
// promtool — and writes the audit log of its failures, for tests of
// promsource and of `gpuheal model train --prometheus`.
package promsourcetest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/gpuheal/gpuheal/internal/audit"
	"github.com/gpuheal/gpuheal/internal/audit/jsonl"
	"github.com/gpuheal/gpuheal/internal/fleetsim"
	"github.com/gpuheal/gpuheal/internal/predict/trace"
)

// Options describe the fleet.
type Options struct {
	GPUs, GPUsPerNode int
	Days              float64
	Seed              uint64
	FailureRate       float64
	// Gaps are stretches of a GPU's history with no telemetry.
	Gaps []Gap
	// PrometheusArgs are added to Prometheus' command line.
	PrometheusArgs []string
}

// Gap is a stretch in which GPU's agent was not scraped: From to To after
// the start.
type Gap struct {
	GPU      int
	From, To time.Duration
}

// Fleet is a simulated history served by a real Prometheus.
type Fleet struct {
	// URL of the Prometheus holding the history.
	URL string
	// Set is the simulated traces: the ground truth.
	Set *trace.Set
	// Start is the first sample's time, End the time after the last.
	Start, End time.Time
	// AuditJSONL is the audit log of the failures; Records what it holds.
	AuditJSONL string
	Records    []audit.Record
	o          Options
}

// Start simulates the fleet, loads it into a Prometheus started for the
// test, and writes its audit log. The history ends on the hour before
// now, within the server's retention.
func Start(t testing.TB, o Options) *Fleet {
	t.Helper()
	promtool, prom := RequireTool(t, "promtool"), RequireTool(t, "prometheus")
	if o.GPUsPerNode <= 0 {
		o.GPUsPerNode = 8
	}
	dir := t.TempDir()
	days := time.Duration(o.Days * float64(24*time.Hour))
	start := time.Now().UTC().Truncate(time.Hour).Add(-days - time.Hour)
	traces := filepath.Join(dir, "traces")
	began := time.Now()
	if _, err := fleetsim.Write(context.Background(), traces, fleetsim.Options{GPUs: o.GPUs, Days: o.Days, Seed: o.Seed,
		FailureRate: o.FailureRate, Start: start}); err != nil {
		t.Fatal(err)
	}
	set, err := trace.Open(traces)
	if err != nil {
		t.Fatal(err)
	}
	f := &Fleet{Set: set, Start: start, End: start.Add(days), o: o}

	om := filepath.Join(dir, "history.om")
	file, err := os.Create(om)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.writeOpenMetrics(file); err != nil {
		t.Fatal(err)
	}
	if err := file.Close(); err != nil {
		t.Fatal(err)
	}
	info, _ := os.Stat(om)
	rendered := time.Now()
	data := filepath.Join(dir, "prometheus")
	// One block per day: promtool reads the file once per block.
	out, err := exec.Command(promtool, "tsdb", "create-blocks-from", "openmetrics", "--quiet",
		"--max-block-duration=24h", om, data).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool tsdb create-blocks-from openmetrics: %v\n%s", err, out)
	}
	_ = os.Remove(om)
	t.Logf("fleet of %d GPUs × %g days: simulated and rendered (%d MB of OpenMetrics) in %.1f s, backfilled in %.1f s",
		o.GPUs, o.Days, info.Size()>>20, rendered.Sub(began).Seconds(), time.Since(rendered).Seconds())

	cfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte("global:\n  scrape_interval: 1m\nscrape_configs: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	args := append([]string{"--config.file=" + cfg, "--storage.tsdb.path=" + data,
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port),
		// The history is in the past: keep every block of it.
		"--storage.tsdb.retention.time=10y"}, o.PrometheusArgs...)
	startProcess(t, prom, args...)
	f.URL = fmt.Sprintf("http://127.0.0.1:%d", port)
	waitReady(t, f.URL+"/-/ready", 30*time.Second)

	f.AuditJSONL = filepath.Join(dir, "audit.jsonl")
	f.writeAudit(t)
	return f
}

// Node names GPU slot gpu's node as the fleet's series label it.
func (f *Fleet) Node(gpu int) string { return fmt.Sprintf("node-%02d", gpu/f.o.GPUsPerNode) }

// UUID names GPU slot gpu's board as the fleet's series label it.
func (f *Fleet) UUID(gpu int) string {
	return fmt.Sprintf("GPU-%08x-0000-4000-8000-%012x", f.o.Seed&0xffffffff, gpu)
}

// labels are a GPU's identity labels, and those a scrape adds.
func (f *Fleet) labels(gpu int) string {
	i := gpu % f.o.GPUsPerNode
	return fmt.Sprintf(`node="%s",uuid="%s",gpu="%d",pci_bus_id="0000:%02x:00.0",model="NVIDIA H100 80GB HBM3",`+
		`job="gpuheal-agent",instance="10.0.%d.1:9400"`, f.Node(gpu), f.UUID(gpu), i, 0x18+i*0x10, gpu/f.o.GPUsPerNode)
}

// InGap says whether GPU gpu's telemetry is left out at t.
func (f *Fleet) InGap(gpu int, t time.Time) bool {
	for _, g := range f.o.Gaps {
		if g.GPU == gpu && !t.Before(f.Start.Add(g.From)) && t.Before(f.Start.Add(g.To)) {
			return true
		}
	}
	return false
}

// writeAudit writes the controller's records of each failure — Detected
// 90 s after the fatal condition, whose time the message carries, and
// Succeeded at the repair — and one KernelReady incident, which is not a
// GPU failure.
func (f *Fleet) writeAudit(t testing.TB) {
	t.Helper()
	for i, fl := range f.Set.Manifest.Failures {
		node, uuid := f.Node(fl.GPU), f.UUID(fl.GPU)
		inc := fmt.Sprintf("%s-%d", node, i)
		f.Records = append(f.Records,
			audit.Record{Key: audit.Key(inc, string(audit.Detected), 0), Time: fl.Time.Add(90 * time.Second),
				Incident: inc, Node: node, Kind: audit.Detected, Reason: fl.Class, Severity: audit.SeverityCritical,
				Message: fmt.Sprintf("AcceleratedHardwareReady=False since %s: GPU %s: %s",
					fl.Time.UTC().Format(time.RFC3339), uuid, fl.Class),
				GPUs: []string{uuid}},
			audit.Record{Key: audit.Key(inc, string(audit.Succeeded), 0), Time: fl.RepairedAt,
				Incident: inc, Node: node, Kind: audit.Succeeded, Phase: "Succeeded"})
	}
	at := f.Start.Add(time.Hour)
	f.Records = append(f.Records, audit.Record{Key: "kernel/Detected/0", Time: at, Incident: "kernel", Node: f.Node(0),
		Kind: audit.Detected, Reason: "HungTask", Severity: audit.SeverityCritical,
		Message: fmt.Sprintf("KernelReady=False since %s: hung tasks", at.Add(-time.Minute).Format(time.RFC3339))})
	w, err := jsonl.OpenFile(f.AuditJSONL, jsonl.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(context.Background(), f.Records...); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}
