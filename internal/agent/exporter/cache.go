package exporter

import (
	"bytes"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
)

// scrapeCache holds the encoded body of the last Update. The series only
// change when Update runs (every collection interval), while Prometheus
// may scrape more often and several Prometheus replicas scrape the same
// agent: encoding and compressing ~1,000 series once per Update instead of
// once per scrape keeps a scrape to copying bytes. The Go and process
// metrics are gathered at the same moment, not per scrape: reading
// /proc/self and the runtime costs ~2.5 ms (BenchmarkScrape8GPU), and a
// view of the agent's own health as old as its GPU view is fine.
type scrapeCache struct {
	// parts are gathered and encoded one at a time (see part); their
	// families are disjoint by construction, and Exporter.Gatherer, which
	// merges them, still checks that for the Pusher.
	parts   []prometheus.Gatherer
	version func() uint64

	mu      sync.Mutex
	built   uint64 // version the bodies were built from; 0 = none
	plain   []byte
	gzipped []byte
	err     error
	// zw is reused for every encoding. It compresses statelessly
	// (klauspost/compress): compress/flate keeps ~1.1 MB of hash tables
	// per writer even at BestSpeed, resident for the agent's life if kept
	// and a third of all it allocated if made per Update; the stateless
	// encoder borrows small tables per call and made the 8-GPU body
	// 11.0 KB instead of 10.8 KB (BenchmarkScrape8GPU, body-bytes).
	zw *gzip.Writer
}

const textContentType = "text/plain; version=0.0.4; charset=utf-8"

func (c *scrapeCache) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	plain, gzipped, err := c.bodies()
	if err != nil {
		http.Error(w, "encoding metrics: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", textContentType)
	body := plain
	if acceptsGzip(r) {
		w.Header().Set("Content-Encoding", "gzip")
		body = gzipped
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	_, _ = w.Write(body)
}

// bodies returns the encoded bodies of the current version, building them
// on the first scrape after an Update.
func (c *scrapeCache) bodies() ([]byte, []byte, error) {
	v := c.version()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.built == v && v != 0 {
		return c.plain, c.gzipped, c.err
	}
	// Sized from the last bodies: growing from empty would allocate about
	// twice the body and keep up to half of it as spare capacity.
	var buf bytes.Buffer
	buf.Grow(len(c.plain) + len(c.plain)/16)
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	var gatherErr error
	encoded := 0
	for _, g := range c.parts {
		// A registry returns what it could gather with the error of the
		// rest: one broken collector (say, the process collector) must
		// not cost the GPU series.
		mfs, err := g.Gather()
		if err != nil && len(mfs) == 0 {
			gatherErr = err
			continue
		}
		for _, mf := range mfs {
			if err := enc.Encode(mf); err != nil {
				return nil, nil, err
			}
		}
		encoded += len(mfs)
	}
	if encoded == 0 && gatherErr != nil {
		return nil, nil, gatherErr
	}
	c.plain, c.gzipped, c.err, c.built = buf.Bytes(), c.gzipBytes(buf.Bytes()), nil, v
	return c.plain, c.gzipped, nil
}

func (c *scrapeCache) gzipBytes(b []byte) []byte {
	var buf bytes.Buffer
	buf.Grow(len(c.gzipped) + len(c.gzipped)/8)
	if c.zw == nil {
		c.zw, _ = gzip.NewWriterLevel(&buf, gzip.StatelessCompression)
	} else {
		c.zw.Reset(&buf)
	}
	_, _ = c.zw.Write(b)
	_ = c.zw.Close()
	return buf.Bytes()
}

func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		enc, q, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.TrimSpace(enc) == "gzip" && strings.TrimSpace(q) != "q=0" {
			return true
		}
	}
	return false
}
