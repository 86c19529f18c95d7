package promsource

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// client is the Prometheus HTTP API with errors that say which server,
// query and range failed.
type client struct {
	api     v1.API
	url     string // redacted
	timeout time.Duration
	log     *slog.Logger

	queries, points atomic.Int64
}

func newClient(o *Options) (*client, error) {
	c, err := api.NewClient(api.Config{Address: o.URL, RoundTripper: o.RoundTripper})
	if err != nil {
		return nil, fmt.Errorf("prometheus URL %s: %w", redacted(o.URL), err)
	}
	return &client{api: v1.NewAPI(c), url: redacted(o.URL), timeout: o.QueryTimeout, log: o.Log}, nil
}

// queryRange runs one range query; the result is a matrix.
func (c *client) queryRange(ctx context.Context, expr string, r v1.Range) (model.Matrix, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	c.queries.Add(1)
	v, warnings, _, err := c.api.QueryRange(ctx, expr, r)
	if err != nil {
		return nil, fmt.Errorf("querying Prometheus at %s: %s from %s to %s at step %s: %w",
			c.url, expr, r.Start.Format(time.RFC3339), r.End.Format(time.RFC3339), r.Step, err)
	}
	for _, w := range warnings {
		c.log.Warn("prometheus warning", "query", expr, "warning", w)
	}
	m, ok := v.(model.Matrix)
	if !ok {
		return nil, fmt.Errorf("querying Prometheus at %s: %s: got a %s, want a matrix", c.url, expr, v.Type())
	}
	var n int64
	for _, s := range m {
		n += int64(len(s.Values))
	}
	c.points.Add(n)
	return m, nil
}

// seriesCount is the number of raw series a selector matches over the
// range: what one step of a query over it loads.
func (c *client) seriesCount(ctx context.Context, selector string, start, end time.Time) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	sets, warnings, _, err := c.api.Series(ctx, []string{selector}, start, end)
	if err != nil {
		return 0, fmt.Errorf("listing series at Prometheus %s: %s from %s to %s: %w",
			c.url, selector, start.Format(time.RFC3339), end.Format(time.RFC3339), err)
	}
	for _, w := range warnings {
		c.log.Warn("prometheus warning", "series", selector, "warning", w)
	}
	return len(sets), nil
}
