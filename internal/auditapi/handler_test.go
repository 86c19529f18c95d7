package auditapi

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuheal/gpuheal/internal/audit"
	"github.com/gpuheal/gpuheal/internal/audit/jsonl"
	"github.com/gpuheal/gpuheal/internal/audit/sqlite"
	"github.com/gpuheal/gpuheal/internal/auditapi/auditapitest"
)

// fixture serves a real SQLite store holding auditapitest.Records(now),
// mounted the way the controller mounts it.
func fixture(t *testing.T, now time.Time) (*httptest.Server, *sqlite.Store) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.db")
	auditapitest.WriteSQLite(t, path, now)
	s, err := sqlite.Open(context.Background(), path, sqlite.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	mux := http.NewServeMux()
	h := Handler(s).(*handler)
	h.now = func() time.Time { return now }
	mux.Handle(Prefix, h)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, s
}

func get(t *testing.T, url string) (int, http.Header, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

func keys(recs []audit.Record) []string {
	var out []string
	for _, r := range recs {
		out = append(out, r.Key)
	}
	return out
}

func TestRecords(t *testing.T) {
	now := time.Date(2026, 11, 30, 13, 0, 0, 0, time.UTC)
	srv, _ := fixture(t, now)
	all := auditapitest.Records(now)

	tests := []struct {
		query string
		want  []string // keys, oldest first
	}{
		{"", keys(all)},
		{"?node=gpu-b", keys(all[12:])},
		{"?incident=gpu-a-0000", keys(all[:3])},
		{"?since=2h", keys(all[12:])},
		{"?since=" + now.Add(-3*time.Hour).Format(time.RFC3339Nano) + "&node=gpu-a", keys(all[3:12])},
		{"?limit=2", keys(all[14:])},
		{"?node=gpu-c", nil},
	}
	for _, tt := range tests {
		code, hdr, body := get(t, srv.URL+"/audit/records"+tt.query)
		if code != http.StatusOK || hdr.Get("Content-Type") != "application/json" {
			t.Fatalf("%s: %d %s %s", tt.query, code, hdr.Get("Content-Type"), body)
		}
		var recs []audit.Record
		if err := json.Unmarshal([]byte(body), &recs); err != nil {
			t.Fatalf("%s: %v\n%s", tt.query, err, body)
		}
		if diff := cmp.Diff(tt.want, keys(recs)); diff != "" {
			t.Errorf("%s: keys (-want +got):\n%s", tt.query, diff)
		}
		if tt.want == nil && strings.TrimSpace(body) != "[]" {
			t.Errorf("%s: empty answer %q, want []", tt.query, body)
		}
	}

	// Every field survives the trip, hashes included.
	_, _, body := get(t, srv.URL+"/audit/records?incident=gpu-a-1111")
	var recs []audit.Record
	if err := json.Unmarshal([]byte(body), &recs); err != nil {
		t.Fatal(err)
	}
	r := recs[5] // ActionRequested
	if r.Kind != audit.ActionRequested || r.Provider != "aws" || r.RequestID != "req-42" || r.Seq != 9 ||
		!r.Time.Equal(now.Add(-3*time.Hour+3*time.Minute)) || r.Hash != audit.ComputeHash(&r) || r.PrevHash != recs[4].Hash {
		t.Errorf("record = %+v", r)
	}
}

func TestVerifyAndExport(t *testing.T) {
	now := time.Now().UTC()
	srv, store := fixture(t, now)
	code, _, body := get(t, srv.URL+"/audit/verify")
	if code != http.StatusOK {
		t.Fatalf("verify: %d %s", code, body)
	}
	want, err := store.Verify(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var v VerifyReport
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatal(err)
	}
	if !v.OK || v.Records != 16 || v.Head.Seq != 16 || v.Head.Hash != want.Head.Hash || v.FirstBad != nil {
		t.Errorf("verify = %s", body)
	}
	if !strings.Contains(body, `"ok":true`) || !strings.Contains(body, `"head":{"seq":16,"hash":"`) {
		t.Errorf("verify JSON form changed: %s", body)
	}

	code, hdr, body := get(t, srv.URL+"/audit/export")
	if code != http.StatusOK || hdr.Get("Content-Type") != "application/jsonl" {
		t.Fatalf("export: %d %v", code, hdr)
	}
	var direct bytes.Buffer
	if err := store.Export(context.Background(), &direct); err != nil {
		t.Fatal(err)
	}
	if body != direct.String() || strings.Count(body, "\n") != 16 {
		t.Errorf("export differs from the store's:\n%s\nwant\n%s", body, direct.String())
	}
	rep, err := jsonl.Verify(strings.NewReader(body))
	if err != nil || !rep.OK || rep.Head != want.Head {
		t.Errorf("exported chain: %v %+v", err, rep)
	}
}

func TestErrors(t *testing.T) {
	srv, _ := fixture(t, time.Now())
	tests := []struct {
		path string
		code int
		want string
	}{
		{"/audit/records?since=yesterday", 400, `"since"`},
		{"/audit/records?since=-1h", 400, `"since"`},
		{"/audit/records?since=1000-01-01T00:00:00Z", 400, `"since"`},
		{"/audit/records?limit=ten", 400, `"limit"`},
		{"/audit/records?node=a&node=b", 400, `"node"`},
		{"/audit/records?nodes=a", 400, `"nodes"`},
		{"/audit/records?node=%zz", 400, "bad query string"},
		{"/audit/verify?full=1", 400, `"full"`},
		{"/audit/nothing", 404, "no such audit endpoint"},
	}
	for _, tt := range tests {
		code, hdr, body := get(t, srv.URL+tt.path)
		var e errorBody
		if err := json.Unmarshal([]byte(body), &e); err != nil || hdr.Get("Content-Type") != "application/json" {
			t.Errorf("%s: not a JSON error: %q", tt.path, body)
		}
		if code != tt.code || !strings.Contains(e.Error, tt.want) {
			t.Errorf("%s: %d %q, want %d naming %s", tt.path, code, e.Error, tt.code, tt.want)
		}
	}
	resp, err := http.Post(srv.URL+"/audit/records", "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" {
		t.Errorf("POST: %d allow %q", resp.StatusCode, resp.Header.Get("Allow"))
	}
}

func TestNilReaderAndStripPrefix(t *testing.T) {
	srv := httptest.NewServer(http.StripPrefix("/audit", Handler(nil)))
	defer srv.Close()
	for _, p := range []string{"/audit/records", "/audit/verify", "/audit/export"} {
		code, _, body := get(t, srv.URL+p)
		if code != http.StatusServiceUnavailable || !strings.Contains(body, "no readable audit store") {
			t.Errorf("%s with a nil reader: %d %s", p, code, body)
		}
	}
	// Parameters are still checked first: a bad request is the client's.
	if code, _, _ := get(t, srv.URL+"/audit/records?limit=x"); code != http.StatusBadRequest {
		t.Errorf("bad limit with a nil reader: %d", code)
	}
}

// failingReader fails its export after the first line.
type failingReader struct{ audit.Reader }

func (failingReader) Export(_ context.Context, w io.Writer) error {
	if _, err := io.WriteString(w, strings.Repeat("x", 64<<10)+"\n"); err != nil {
		return err
	}
	return io.ErrUnexpectedEOF
}

func TestBrokenExportIsNotAShortValidOne(t *testing.T) {
	srv := httptest.NewServer(Handler(failingReader{}))
	defer srv.Close()
	c, err := NewClient(srv.URL, srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err = c.Export(context.Background(), &out)
	if err == nil {
		t.Fatalf("export that failed half-way read as complete (%d bytes)", out.Len())
	}
}
