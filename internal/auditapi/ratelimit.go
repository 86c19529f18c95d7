package auditapi

import (
	"net"
	"net/http"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Options bound what one client may ask of the audit API. An export or a
// verify reads the whole store, so a client looping on them would keep the
// controller's store busy.
type Options struct {
	// Rate is the requests a second one client may make, Burst how many at
	// once.
	Rate  rate.Limit
	Burst int
	// Now reads the clock (tests step it); default time.Now.
	Now func() time.Time
}

// DefaultOptions allow a CLI's few requests a command with room to spare.
func DefaultOptions() Options { return Options{Rate: 5, Burst: 10} }

// maxClients bounds the limiters kept; past it they are all forgotten,
// which at worst lets clients start a fresh burst.
const maxClients = 4096

type clientLimits struct {
	o       Options
	mu      sync.Mutex
	clients map[string]*rate.Limiter
}

func newClientLimits(o Options) *clientLimits {
	if o.Rate <= 0 {
		o.Rate = DefaultOptions().Rate
	}
	if o.Burst <= 0 {
		o.Burst = DefaultOptions().Burst
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &clientLimits{o: o, clients: map[string]*rate.Limiter{}}
}

// allow takes a token for r's client, or says how long until one is free.
func (c *clientLimits) allow(r *http.Request) (time.Duration, bool) {
	key := clientKey(r)
	c.mu.Lock()
	defer c.mu.Unlock()
	l, ok := c.clients[key]
	if !ok {
		if len(c.clients) >= maxClients {
			clear(c.clients)
		}
		l = rate.NewLimiter(c.o.Rate, c.o.Burst)
		c.clients[key] = l
	}
	now := c.o.Now()
	res := l.ReserveN(now, 1)
	if d := res.DelayFrom(now); d > 0 {
		res.CancelAt(now)
		return d, false
	}
	return 0, true
}

// clientKey is the client's IP address: requests reach the handler only
// after authentication, from a pod or a port-forward.
func clientKey(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
