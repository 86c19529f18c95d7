package exporter

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

func scrape(t *testing.T, h http.Handler, encoding string) (string, http.Header) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	if encoding != "" {
		req.Header.Set("Accept-Encoding", encoding)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	body := rec.Body.Bytes()
	if rec.Header().Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if body, err = io.ReadAll(zr); err != nil {
			t.Fatal(err)
		}
	}
	return string(body), rec.Header()
}

// The cached body must follow every Update, gzip must carry the same text,
// and the runtime metrics come with it.
func TestScrapeCacheFollowsUpdatesAndEncodings(t *testing.T) {
	e := New(Options{RuntimeMetrics: true})
	h := e.Handler()
	snap := simSnapshot(t)
	e.Update(snap, results)
	plain, hdr := scrape(t, h, "")
	if ct := hdr.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Fatalf("content type %q", ct)
	}
	gz, hdr := scrape(t, h, "deflate, gzip")
	if hdr.Get("Content-Encoding") != "gzip" {
		t.Fatal("gzip was accepted but not used")
	}
	for name, body := range map[string]string{"plain": plain, "gzip": gz} {
		for _, want := range []string{`gpuheal_gpu_temperature_celsius{gpu="7"`, "go_goroutines ", "process_resident_memory_bytes "} {
			if !strings.Contains(body, want) {
				t.Errorf("%s scrape lacks %q", name, want)
			}
		}
	}

	snap.GPUs[7].TemperatureCelsius = nil
	e.Update(snap, results)
	after, _ := scrape(t, h, "gzip")
	if strings.Contains(after, `gpuheal_gpu_temperature_celsius{gpu="7"`) {
		t.Fatal("scrape after Update still serves the old GPU 7 temperature")
	}
}

func TestAcceptsGzip(t *testing.T) {
	for header, want := range map[string]bool{
		"":                     false,
		"gzip":                 true,
		"deflate, gzip;q=1.0":  true,
		"gzip;q=0":             false,
		"identity":             false,
		"br, gzip, deflate, *": true,
	} {
		r := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		r.Header.Set("Accept-Encoding", header)
		if got := acceptsGzip(r); got != want {
			t.Errorf("Accept-Encoding %q: acceptsGzip = %v, want %v", header, got, want)
		}
	}
}

// The body is encoded a registry at a time (part): it must still hold
// every family once, fabric and GPU alike, as the merged Gatherer has them.
func TestScrapeBodyHoldsEveryPartOnce(t *testing.T) {
	e := New(Options{RuntimeMetrics: true})
	snap := simSnapshot(t)
	snap.Fabric = fabricSnapshot()
	e.Update(snap, results)
	body, _ := scrape(t, e.Handler(), "gzip")
	// The text parser refuses a family that comes back after another one.
	parser := expfmt.NewTextParser(model.UTF8Validation)
	parsed, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parsing the scrape: %v", err)
	}
	merged, err := e.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(parsed) != len(merged) {
		t.Errorf("scrape has %d families, the merged gatherer %d", len(parsed), len(merged))
	}
	for _, mf := range merged {
		got, ok := parsed[mf.GetName()]
		if !ok {
			t.Errorf("scrape lacks %s", mf.GetName())
			continue
		}
		if strings.HasPrefix(mf.GetName(), "gpuheal_") && len(got.GetMetric()) != len(mf.GetMetric()) {
			t.Errorf("%s: %d series scraped, %d gathered", mf.GetName(), len(got.GetMetric()), len(mf.GetMetric()))
		}
	}
	for _, name := range []string{"gpuheal_fabric_port_up", "gpuheal_gpu_temperature_celsius"} {
		if _, ok := parsed[name]; !ok {
			t.Errorf("scrape lacks %s", name)
		}
	}
}
