package auditapi

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	testclock "k8s.io/utils/clock/testing"

	"github.com/gpuheal/gpuheal/internal/audit"
	"github.com/gpuheal/gpuheal/internal/auditapi/auditapitest"
)

func TestPageSizeIsBounded(t *testing.T) {
	now := time.Now().UTC()
	srv, _ := fixture(t, now)
	for _, limit := range []int{MaxLimit + 1, -1, 1 << 30} {
		code, _, body := get(t, fmt.Sprintf("%s%s%s?limit=%d", srv.URL, Prefix, RecordsPath, limit))
		if code != http.StatusBadRequest || !strings.Contains(body, fmt.Sprintf("outside 1 to %d", MaxLimit)) || !strings.Contains(body, Prefix+ExportPath) {
			t.Errorf("limit=%d: %d %s, want 400 naming the bound and the export", limit, code, body)
		}
	}
	if code, _, body := get(t, fmt.Sprintf("%s%s%s?limit=%d", srv.URL, Prefix, RecordsPath, MaxLimit)); code != http.StatusOK {
		t.Errorf("limit=%d: %d %s, want 200", MaxLimit, code, body)
	}
	// The client reads a query larger than a page from the export.
	c, err := NewClient(srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := c.Query(context.Background(), audit.Filter{Node: auditapitest.NodeB, Limit: -1})
	if err != nil {
		t.Fatal(err)
	}
	var want []audit.Record
	for _, r := range auditapitest.Records(now) {
		if r.Node == auditapitest.NodeB {
			want = append(want, r)
		}
	}
	if diff := cmp.Diff(keys(want), keys(recs)); diff != "" {
		t.Errorf("unbounded query through the export (-want +got):\n%s", diff)
	}
}

func TestRequestRateIsBoundedPerClient(t *testing.T) {
	clk := testclock.NewFakeClock(time.Now())
	h := NewHandler(audit.NewMemory(), Options{Rate: 1, Burst: 2, Now: clk.Now})
	do := func(addr string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodGet, Prefix+VerifyPath, nil)
		req.RemoteAddr = addr
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w
	}
	for i := range 2 {
		if w := do("10.0.0.1:5000"); w.Code != http.StatusOK {
			t.Fatalf("request %d within the burst: %d %s", i, w.Code, w.Body)
		}
	}
	w := do("10.0.0.1:5001") // another port of the same client
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "1" || !strings.Contains(w.Body.String(), "10.0.0.1") {
		t.Errorf("past the burst: %d Retry-After=%q %s, want 429 naming the client, Retry-After 1", w.Code, w.Header().Get("Retry-After"), w.Body)
	}
	if w := do("10.0.0.2:5000"); w.Code != http.StatusOK {
		t.Errorf("another client: %d, want 200", w.Code)
	}
	clk.Step(time.Second)
	if w := do("10.0.0.1:5000"); w.Code != http.StatusOK {
		t.Errorf("a second later: %d, want 200", w.Code)
	}
}
