package exporter

import (
	"bytes"
	"compress/gzip"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
)

// scrapeCache holds the encoded body of the last Update. The series only
// change when Update runs (every collection interval), while Prometheus
// may scrape more often and several Prometheus replicas scrape the same
// agent: encoding and compressing ~1,000 series once per Update instead of
// once per scrape keeps a scrape to copying bytes.
type scrapeCache struct {
	gatherer prometheus.Gatherer
	// runtime, when set, is gathered live on every scrape (Go and process
	// metrics change between Updates) and appended to the cached body.
	runtime prometheus.Gatherer
	version func() uint64

	mu      sync.Mutex
	built   uint64 // version the bodies were built from; 0 = none
	plain   []byte
	gzipped []byte
	err     error
}

const textContentType = "text/plain; version=0.0.4; charset=utf-8"

func (c *scrapeCache) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	plain, gzipped, err := c.bodies()
	if err != nil {
		http.Error(w, "encoding metrics: "+err.Error(), http.StatusInternalServerError)
		return
	}
	var extra []byte
	if c.runtime != nil {
		extra = encodeText(c.runtime) // best effort: a broken runtime collector never costs the GPU series
	}
	w.Header().Set("Content-Type", textContentType)
	if acceptsGzip(r) {
		// Concatenated gzip members form one valid gzip stream (RFC 1952
		// §2.2), so the live runtime part is compressed on its own.
		if len(extra) > 0 {
			gzipped = append(append([]byte(nil), gzipped...), gzipBytes(extra)...)
		}
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("Content-Length", strconv.Itoa(len(gzipped)))
		_, _ = w.Write(gzipped)
		return
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(plain)+len(extra)))
	_, _ = w.Write(plain)
	_, _ = w.Write(extra)
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
	mfs, err := c.gatherer.Gather()
	if err != nil && len(mfs) == 0 {
		return nil, nil, err
	}
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			return nil, nil, err
		}
	}
	c.plain, c.gzipped, c.err, c.built = buf.Bytes(), gzipBytes(buf.Bytes()), nil, v
	return c.plain, c.gzipped, nil
}

func encodeText(g prometheus.Gatherer) []byte {
	mfs, _ := g.Gather()
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		_ = enc.Encode(mf)
	}
	return buf.Bytes()
}

func gzipBytes(b []byte) []byte {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	_, _ = zw.Write(b)
	_ = zw.Close()
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
