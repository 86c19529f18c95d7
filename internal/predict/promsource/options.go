package promsource

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"time"
)

// Limits of the Prometheus HTTP API that chunking stays under.
const (
	// MaxPointsPerSeries is the most points Prometheus returns per series
	// of one range query; it refuses a query asking for more.
	MaxPointsPerSeries = 11000
	// DefaultMaxSamples is a tenth of Prometheus' default
	// --query.max-samples (50 M): one query of ours loads at most this
	// many samples, leaving memory for the dashboards and rules that share
	// the server while four of ours run. Time grows with the samples a
	// query loads, so shorter queries cost little more in all.
	DefaultMaxSamples = 5_000_000
	// DefaultMaxSlotPoints bounds what one chunk holds in memory here:
	// GPUs × steps, each a column of 30 float64s plus the decoded query
	// results (a chunk's peak heap: docs/benchmarks.md, "Predictor").
	DefaultMaxSlotPoints = 500_000
)

// Options say which history to read.
type Options struct {
	// URL of the Prometheus server (or anything serving its HTTP API:
	// Thanos Query, Mimir, VictoriaMetrics), e.g. http://prometheus:9090.
	URL string
	// RoundTripper carries the requests (http.DefaultTransport when nil).
	RoundTripper http.RoundTripper
	// Start and End bound the history; Start is rounded up and End down
	// to whole steps since the Unix epoch, so that samples fall on the
	// trace grid.
	Start, End time.Time
	// Step between samples, whole seconds. The features are defined on
	// 30 s slots (predict.Interval): a longer step loses resolution.
	Step time.Duration
	// NodeLabel is the label that carries the node name: `node` with the
	// chart's ServiceMonitor.
	NodeLabel string
	// Selector is label matchers added to every series selector, e.g.
	// `cluster="prod"` or `job="gpuheal-agent"`; Prometheus checks them.
	Selector string
	// MaxPoints per series per query (at most MaxPointsPerSeries).
	MaxPoints int
	// MaxSamples is the most samples one query may make Prometheus load;
	// a query over many raw series (NVLink counters: links × types per
	// GPU) is split into shorter ranges to stay under it.
	MaxSamples int
	// MaxSlotPoints bounds GPUs × steps held in memory at once.
	MaxSlotPoints int
	// Workers: queries in flight at once.
	Workers int
	// QueryTimeout bounds each HTTP request.
	QueryTimeout time.Duration
	Log          *slog.Logger
}

var labelName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// complete fills defaults and checks the options.
func (o *Options) complete() error {
	if o.NodeLabel == "" {
		o.NodeLabel = "node"
	}
	if o.MaxPoints <= 0 || o.MaxPoints > MaxPointsPerSeries {
		o.MaxPoints = MaxPointsPerSeries
	}
	if o.MaxSamples <= 0 {
		o.MaxSamples = DefaultMaxSamples
	}
	if o.MaxSlotPoints <= 0 {
		o.MaxSlotPoints = DefaultMaxSlotPoints
	}
	if o.Workers <= 0 {
		o.Workers = 4
	}
	if o.QueryTimeout <= 0 {
		o.QueryTimeout = 2 * time.Minute
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	u, err := url.Parse(o.URL)
	switch {
	case err != nil:
		return fmt.Errorf("prometheus URL %q: %w", o.URL, err)
	case u.Scheme != "http" && u.Scheme != "https" || u.Host == "":
		return fmt.Errorf("prometheus URL %q: want http(s)://host[:port][/path]", o.URL)
	case o.Step < time.Second || o.Step%time.Second != 0 || o.Step > time.Hour:
		return fmt.Errorf("step %s: want whole seconds from 1s to 1h", o.Step)
	case !labelName.MatchString(o.NodeLabel):
		return fmt.Errorf("node label %q: not a Prometheus label name", o.NodeLabel)
	}
	o.Start, o.End = ceilStep(o.Start, o.Step), floorStep(o.End, o.Step)
	if !o.Start.Before(o.End) {
		return fmt.Errorf("history from %s to %s: want at least one step (%s) between them",
			o.Start.Format(time.RFC3339), o.End.Format(time.RFC3339), o.Step)
	}
	return nil
}

// ceilStep and floorStep round t to a whole number of steps since the
// Unix epoch (time.Truncate counts from year 1, which is on the same grid
// only for steps that divide a day).
func ceilStep(t time.Time, step time.Duration) time.Time {
	f := floorStep(t, step)
	if f.Before(t) {
		f = f.Add(step)
	}
	return f
}

func floorStep(t time.Time, step time.Duration) time.Time {
	s := int64(step / time.Second)
	u := t.Unix() // floors: Unix seconds of a time before the epoch round down too
	u -= ((u % s) + s) % s
	return time.Unix(u, 0).UTC()
}

// redacted is the URL without a password, for errors and trace manifests.
func redacted(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	return u.Redacted()
}
