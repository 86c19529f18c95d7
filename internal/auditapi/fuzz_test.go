package auditapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/gpuheal/gpuheal/internal/audit"
)

// FuzzParseFilter feeds raw query strings, as a client may send anything,
// to the parser and to the handler over an in-memory store: no panic, only
// 200 or 400, a 400 says what was wrong, and an accepted since is a time
// the stores can compare.
func FuzzParseFilter(f *testing.F) {
	for _, s := range []string{"", "node=gpu-a", "since=24h", "since=2026-11-30T13:00:00Z", "limit=-1",
		"since=9999999999h", "since=0001-01-01T00:00:00Z", "node=a&node=b", "x=1", "%zz", "limit=99999999999999999999",
		"since=-5m", "incident=a&since=1ns&limit=0"} {
		f.Add(s)
	}
	now := time.Date(2026, 11, 30, 13, 0, 0, 0, time.UTC)
	mem := audit.NewMemory()
	if err := mem.Write(context.Background(), audit.Record{Key: "k", Kind: audit.Detected, Node: "gpu-a", Time: now.Add(-time.Hour)}); err != nil {
		f.Fatal(err)
	}
	h := &handler{reader: mem, now: func() time.Time { return now }, limits: newClientLimits(Options{Rate: rate.Inf})}
	f.Fuzz(func(t *testing.T, raw string) {
		if q, err := url.ParseQuery(raw); err == nil {
			flt, err := ParseFilter(q, now)
			if err == nil && !flt.Since.IsZero() && !time.Unix(0, flt.Since.UnixNano()).Equal(flt.Since) {
				t.Errorf("since %v accepted but not representable in nanoseconds", flt.Since)
			}
			if err != nil && !strings.Contains(err.Error(), "parameter") {
				t.Errorf("error %q names no parameter", err)
			}
		}
		req := httptest.NewRequest(http.MethodGet, "/audit/records", nil)
		req.URL.RawQuery = raw
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		switch rec.Code {
		case http.StatusOK:
			var recs []audit.Record
			if err := json.Unmarshal(rec.Body.Bytes(), &recs); err != nil {
				t.Errorf("200 with a body that is not records: %v", err)
			}
		case http.StatusBadRequest:
			var e errorBody
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error == "" {
				t.Errorf("400 without a message: %q", rec.Body.String())
			}
		default:
			t.Errorf("status %d for %q", rec.Code, raw)
		}
	})
}
