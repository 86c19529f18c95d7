package promsource

import (
	"context"
	"fmt"
	"time"

	"github.com/gpuheal/gpuheal/internal/audit"
	"github.com/gpuheal/gpuheal/internal/predict/trace"
)

// incidentLookback: incidents detected this long before the history's
// start are read too, so that an outage that began before it still takes
// its GPUs out of service.
const incidentLookback = 7 * 24 * time.Hour

// Result is what Build made.
type Result struct {
	Telemetry *Telemetry
	Labels    LabelReport
	Manifest  *trace.Manifest
}

// Build writes a labelled trace directory for the history o describes:
// the GPU files from Prometheus (Fetch) and a manifest whose failures come
// from the audit log (Label). auditSource names the log in the manifest.
// The audit log is read first, so that a wrong path fails before the
// long fetch.
func Build(ctx context.Context, dir string, o Options, lo LabelOptions, log audit.Reader, auditSource string) (*Result, error) {
	if err := o.complete(); err != nil {
		return nil, err
	}
	recs, err := log.Query(ctx, audit.Filter{Since: o.Start.Add(-incidentLookback), Limit: -1})
	if err != nil {
		return nil, fmt.Errorf("reading the audit log: %w", err)
	}
	tel, err := Fetch(ctx, dir, o)
	if err != nil {
		return nil, err
	}
	if lo.End.IsZero() {
		lo.End = tel.End.Add(tel.Step)
	}
	failures, rep := Label(recs, tel.Slots, lo)
	m := &trace.Manifest{
		Format: trace.ManifestFormat, Version: trace.ManifestVersion,
		Source: "prometheus " + tel.URL + ", audit " + auditSource,
		GPUs:   len(tel.Slots), Days: tel.End.Sub(tel.Start).Hours() / 24, Start: tel.Start,
		IntervalSeconds: int(tel.Step / time.Second), Bytes: tel.Bytes, Failures: failures,
	}
	if m.Failures == nil {
		m.Failures = []trace.Failure{}
	}
	if err := trace.WriteManifest(dir, m); err != nil {
		return nil, err
	}
	return &Result{Telemetry: tel, Labels: rep, Manifest: m}, nil
}
