package exporter

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/push"
)

// Pusher sends the agent's metrics to a Pushgateway, for nodes Prometheus
// cannot scrape (air-gapped partitions, short-lived jobs).
type Pusher struct {
	url string // without credentials, for error messages
	p   *push.Pusher
}

// NewPusher pushes what gatherer gathers to the Pushgateway at rawURL
// under job and the grouping labels, usually {"instance": node}. Each
// push replaces the group's previous metrics (HTTP PUT), so series that
// vanished from the node vanish from the gateway too.
//
// Credentials in the URL (http://user:pass@host) are sent as basic auth
// and kept out of every error message.
func NewPusher(rawURL, job string, gatherer prometheus.Gatherer, grouping map[string]string) *Pusher {
	base, user, pass, auth := splitUserinfo(rawURL)
	p := push.New(base, job).Gatherer(gatherer)
	if auth {
		p = p.BasicAuth(user, pass)
	}
	for k, v := range grouping {
		p = p.Grouping(k, v)
	}
	return &Pusher{url: base, p: p}
}

// Push gathers and pushes once.
func (p *Pusher) Push(ctx context.Context) error {
	if err := p.p.PushContext(ctx); err != nil {
		return fmt.Errorf("pushing metrics to %s: %w", p.url, err)
	}
	return nil
}

// RunPusher pushes at once and then every interval until ctx ends.
// Failures go to onErr (which may be nil) and never stop the loop: the
// gateway coming back must not need an agent restart. An interval of 0 or
// less pushes once.
func RunPusher(ctx context.Context, p *Pusher, interval time.Duration, onErr func(error)) {
	if interval <= 0 {
		if err := p.Push(ctx); err != nil && ctx.Err() == nil && onErr != nil {
			onErr(err)
		}
		return
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		if err := p.Push(ctx); err != nil && ctx.Err() == nil && onErr != nil {
			onErr(err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// splitUserinfo takes the credentials out of a URL, because the push
// library repeats its URL in errors, and errors end up in logs. A bare
// host:port (which push accepts) has no credentials to take.
func splitUserinfo(raw string) (base, user, pass string, ok bool) {
	if !strings.Contains(raw, "://") {
		return raw, "", "", false
	}
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw, "", "", false
	}
	user = u.User.Username()
	pass, _ = u.User.Password()
	u.User = nil
	return u.String(), user, pass, true
}
