// Package exporter serves the agent's last GPU snapshot as Prometheus
// metrics and pushes it to a Pushgateway.
//
// A scrape never touches a GPU: the agent's collection loop calls Update
// with each new snapshot, Update renders its series, and Collect sends the
// series of the last Update.
// A GPU call that hangs therefore shows up as a stale
// gpuheal_snapshot_timestamp_seconds and a failed collector, never as a
// scrape timeout that would hide every other metric too.
package exporter

import (
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/gpuheal/gpuheal/internal/gpu"
)

// Options configures an Exporter.
type Options struct {
	// RuntimeMetrics adds the Go runtime and process collectors (go_*,
	// process_*) to Registry, as a real agent wants; tests leave it off so
	// their expected text is only gpuheal_*.
	RuntimeMetrics bool
}

// CollectorResult is how one collection step of the agent went; each
// becomes gpuheal_collector_success and gpuheal_collector_duration_seconds.
type CollectorResult struct {
	// Name is the step: "gpu", "host", "kmsg", ...
	Name     string
	Success  bool
	Duration time.Duration
}

// Exporter renders each snapshot once, in Update, and serves that on every
// scrape. It is a prometheus.Collector; all methods are safe for
// concurrent use.
type Exporter struct {
	d   *descs
	reg *prometheus.Registry
	// fabricReg holds the gpuheal_fabric_* families alone (parts.go).
	fabricReg *prometheus.Registry
	handler   http.Handler
	cache     *scrapeCache
	// gatherers is Registry plus the runtime registry when enabled.
	gatherers prometheus.Gatherers

	// version counts Updates, so the scrape cache knows when to re-encode.
	version atomic.Uint64
	// metrics is replaced whole by Update and never changed once stored,
	// so a scrape sends one consistent snapshot without taking a lock.
	metrics atomic.Pointer[rendered]
	// fabric is the same for the fabric's series.
	fabric atomic.Pointer[rendered]

	mu sync.Mutex // serializes Update, which owns totals
	// totals are the running query-error counts, kept across Updates.
	totals map[queryKey]uint64
}

// queryKey names one query-error counter: the GPU's labels (all "" for
// node-level errors) and the failed query.
type queryKey struct {
	gpu, uuid, bus, model, query string
}

var _ prometheus.Collector = (*Exporter)(nil)

// New builds an Exporter and its registry. Until the first Update it
// exports nothing.
func New(opts Options) *Exporter {
	e := &Exporter{d: newDescs(), reg: prometheus.NewRegistry(), fabricReg: prometheus.NewRegistry(),
		totals: map[queryKey]uint64{}}
	// These registrations can only fail on a programming error (duplicate
	// or inconsistent descriptors) in a fresh registry, which every test of
	// this package would catch; there is no runtime condition to report.
	e.reg.MustRegister(part{e, false})
	e.fabricReg.MustRegister(part{e, true})
	parts := []prometheus.Gatherer{e.reg, e.fabricReg}
	if opts.RuntimeMetrics {
		// A registry of their own keeps Registry() to gpuheal_* series.
		rt := prometheus.NewRegistry()
		rt.MustRegister(
			collectors.NewGoCollector(),
			collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		)
		parts = append(parts, rt)
	}
	e.gatherers = parts
	cache := &scrapeCache{parts: parts, version: e.version.Load}
	e.handler = cache
	e.cache = cache
	return e
}

// Invalidate makes the next scrape re-encode the registry: for collectors
// registered next to the exporter's own (kernel-log findings) whose values
// change between Updates.
func (e *Exporter) Invalidate() { e.version.Add(1) }

// Refresh re-encodes the registry now, off the scrape path, for a caller
// that knows those values just changed (the analyzer after an evaluation).
func (e *Exporter) Refresh() {
	e.version.Add(1)
	_, _, _ = e.cache.bodies()
}

// Registry holds the gpuheal_* series of the last Update but the
// fabric's, and is where the agent registers its other collectors.
func (e *Exporter) Registry() *prometheus.Registry { return e.reg }

// Gatherer is everything Handler serves (with runtime metrics when
// enabled); the Pusher gathers from it.
func (e *Exporter) Gatherer() prometheus.Gatherer { return e.gatherers }

// Handler serves the last Update in the Prometheus text format, encoded
// once per Update (gzip when the scraper accepts it).
func (e *Exporter) Handler() http.Handler { return e.handler }

// Update makes snap the snapshot that scrapes serve and adds its query
// errors to the running totals. The series are rendered here, so snap is
// not kept and the caller may reuse it. A nil snap (the backend failed
// outright) drops the GPU and node metrics, so nothing stale is served,
// while results and the query-error totals still are. For results with the same Name, the
// last wins.
func (e *Exporter) Update(snap *gpu.NodeSnapshot, results []CollectorResult) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if snap != nil {
		for _, qe := range snap.Errors {
			e.totals[queryKey{query: qe.Query}]++
		}
		for i := range snap.GPUs {
			g := &snap.GPUs[i]
			for _, qe := range g.Errors {
				e.totals[queryKey{gpuLabel(g.Index), g.UUID, g.PCIBusID, g.Name, qe.Query}]++
			}
		}
	}
	e.metrics.Store(e.render(snap, dedupe(results), e.metrics.Load()))
	e.fabric.Store(e.renderFabric(snap, e.fabric.Load()))
	e.version.Add(1)
	// Encode now, on the collection loop, so that no scrape pays for it.
	_, _, _ = e.cache.bodies()
}

// dedupe keeps the last result per name: two series with the same labels would fail the scrape.
func dedupe(results []CollectorResult) []CollectorResult {
	out := make([]CollectorResult, 0, len(results))
	seen := make(map[string]int, len(results))
	for _, r := range results {
		if i, ok := seen[r.Name]; ok {
			out[i] = r
			continue
		}
		seen[r.Name] = len(out)
		out = append(out, r)
	}
	return out
}

// label makes a hardware string safe as a label value: client_golang
// panics on invalid UTF-8, and a scrape must never panic on what a GPU
// or driver reports.
func label(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }
