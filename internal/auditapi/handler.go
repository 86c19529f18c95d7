// Package auditapi serves the controller's audit log over HTTP, read-only,
// for the CLI: on the controller's metrics server under /audit/, reached
// through the API server's service proxy so that no extra port is opened.
//
//	GET /audit/records?node=&incident=&since=&limit=  JSON array of records, oldest first (limit 1 to MaxLimit)
//	GET /audit/verify                                 JSON VerifyReport
//	GET /audit/export                                 JSON lines, every record, oldest first
//
// Records use the audit package's JSON form (audit.Record.MarshalJSON),
// the same as a line of an export. Each client (by remote address) may make
// Options.Rate requests a second; past that it gets 429 with Retry-After.
package auditapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gpuheal/gpuheal/internal/audit"
)

// Prefix is where the controller mounts Handler.
const Prefix = "/audit/"

// Paths of the endpoints below Prefix.
const (
	RecordsPath = "records"
	VerifyPath  = "verify"
	ExportPath  = "export"
)

// Handler serves r under Prefix with DefaultOptions. It also works behind
// http.StripPrefix (paths /records, /verify, /export). A nil r (the
// controller writes its audit log to stdout, or keeps none) answers 503.
func Handler(r audit.Reader) http.Handler {
	return NewHandler(r, DefaultOptions())
}

// NewHandler is Handler with its request rate chosen.
func NewHandler(r audit.Reader, o Options) http.Handler {
	return &handler{reader: r, now: time.Now, limits: newClientLimits(o)}
}

type handler struct {
	reader audit.Reader
	now    func() time.Time
	limits *clientLimits
}

// ErrNoStore is the 503 message when the controller keeps no readable store.
const ErrNoStore = "this controller keeps no readable audit store (--audit-sink jsonl to stdout, or none): " +
	"read the audit log from where its output is shipped, or run the controller with --audit-sink sqlite or dynamodb"

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if wait, ok := h.limits.allow(r); !ok {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(wait.Seconds()))))
		writeError(w, http.StatusTooManyRequests, fmt.Sprintf("too many audit API requests from %s: at most %g a second, try again in %v",
			clientKey(r), float64(h.limits.o.Rate), wait.Round(time.Millisecond)))
		return
	}
	p := strings.TrimPrefix(r.URL.Path, strings.TrimSuffix(Prefix, "/"))
	p = strings.TrimPrefix(p, "/")
	if p != RecordsPath && p != VerifyPath && p != ExportPath {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no such audit endpoint %q: use %s%s, %s%s or %s%s",
			r.URL.Path, Prefix, RecordsPath, Prefix, VerifyPath, Prefix, ExportPath))
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, http.StatusMethodNotAllowed, fmt.Sprintf("method %s not allowed: the audit log is read-only", r.Method))
		return
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("bad query string: %v", err))
		return
	}
	var f audit.Filter
	if p == RecordsPath {
		f, err = ParseFilter(q, h.now())
	} else {
		err = noParams(q)
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if h.reader == nil {
		writeError(w, http.StatusServiceUnavailable, ErrNoStore)
		return
	}
	switch p {
	case RecordsPath:
		h.records(w, r, f)
	case VerifyPath:
		h.verify(w, r)
	case ExportPath:
		h.export(w, r)
	}
}

func (h *handler) records(w http.ResponseWriter, r *http.Request, f audit.Filter) {
	recs, err := h.reader.Query(r.Context(), f)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	if recs == nil {
		recs = []audit.Record{}
	}
	writeJSON(w, recs)
}

func (h *handler) verify(w http.ResponseWriter, r *http.Request) {
	rep, err := h.reader.Verify(r.Context())
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, FromReport(rep))
}

func (h *handler) export(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/jsonl")
	cw := &countingWriter{w: w}
	if err := h.reader.Export(r.Context(), cw); err != nil {
		if cw.n == 0 {
			writeError(w, http.StatusInternalServerError, err.Error())
			return
		}
		// The status is sent: the only way left to tell the client that
		// the stream is incomplete is to break it, so that it reads an
		// unexpected EOF instead of a shorter, valid-looking export.
		panic(http.ErrAbortHandler)
	}
}

type countingWriter struct {
	w http.ResponseWriter
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// errorBody is the JSON of every error answer.
type errorBody struct {
	Error string `json:"error"`
}

func writeError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(errorBody{Error: msg})
}

func writeJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("encoding the answer: %v", err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(append(b, '\n'))
}

// The query parameters of /audit/records.
const (
	ParamNode     = "node"
	ParamIncident = "incident"
	ParamSince    = "since"
	ParamLimit    = "limit"
)

// MaxLimit bounds one page of /audit/records: a larger answer is built in
// memory whole. /audit/export streams every record instead.
const MaxLimit = audit.DefaultLimit

// ParseFilter reads the query of /audit/records: node, incident, since
// (RFC 3339, or a Go duration before now such as 24h) and limit (absent or
// 0 audit.DefaultLimit, else 1 to MaxLimit). An
// unknown or repeated parameter is an error, so that a typo is not read
// as "everything". Errors name the parameter.
func ParseFilter(q url.Values, now time.Time) (audit.Filter, error) {
	var f audit.Filter
	for k, vs := range q {
		if len(vs) > 1 {
			return audit.Filter{}, fmt.Errorf("query parameter %q given %d times: give it once", k, len(vs))
		}
		v := vs[0]
		switch k {
		case ParamNode:
			f.Node = v
		case ParamIncident:
			f.Incident = v
		case ParamSince:
			t, err := parseSince(v, now)
			if err != nil {
				return audit.Filter{}, fmt.Errorf("query parameter %q: %w", k, err)
			}
			f.Since = t
		case ParamLimit:
			n, err := strconv.Atoi(v)
			if err != nil {
				return audit.Filter{}, fmt.Errorf("query parameter %q: %q is not an integer", k, v)
			}
			if n < 0 || n > MaxLimit {
				return audit.Filter{}, fmt.Errorf("query parameter %q: %d is outside 1 to %d (MaxLimit); read every record from %s%s",
					k, n, MaxLimit, Prefix, ExportPath)
			}
			f.Limit = n
		default:
			return audit.Filter{}, fmt.Errorf("unknown query parameter %q: want %s, %s, %s or %s",
				k, ParamNode, ParamIncident, ParamSince, ParamLimit)
		}
	}
	return f, nil
}

func parseSince(v string, now time.Time) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		// Stores compare Unix nanoseconds: a time they cannot represent
		// would wrap around and select the wrong records.
		if !t.IsZero() && !time.Unix(0, t.UnixNano()).Equal(t) {
			return time.Time{}, fmt.Errorf("%q is outside the years 1678 to 2262", v)
		}
		return t.UTC(), nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is neither an RFC 3339 time nor a duration such as 24h", v)
	}
	if d < 0 {
		return time.Time{}, fmt.Errorf("duration %q is negative", v)
	}
	t := now.Add(-d)
	if !time.Unix(0, t.UnixNano()).Equal(t) {
		return time.Time{}, fmt.Errorf("duration %q reaches too far back", v)
	}
	return t.UTC(), nil
}

func noParams(q url.Values) error {
	for k := range q {
		return fmt.Errorf("unknown query parameter %q: this endpoint takes none", k)
	}
	return nil
}

// VerifyReport is the JSON form of audit.Report.
type VerifyReport struct {
	OK      bool   `json:"ok"`
	Records uint64 `json:"records"`
	// Head is the last good record.
	Head     Head   `json:"head"`
	FirstBad *Break `json:"firstBad,omitempty"`
}

// Head is the JSON form of audit.Head.
type Head struct {
	Seq  uint64 `json:"seq"`
	Hash string `json:"hash"`
}

// Break is the JSON form of audit.Break.
type Break struct {
	Seq     uint64 `json:"seq"`
	Key     string `json:"key,omitempty"`
	Problem string `json:"problem"`
}

// FromReport converts a report for the wire.
func FromReport(r audit.Report) VerifyReport {
	out := VerifyReport{OK: r.OK, Records: r.Records, Head: Head{Seq: r.Head.Seq, Hash: r.Head.Hash}}
	if r.FirstBad != nil {
		out.FirstBad = &Break{Seq: r.FirstBad.Seq, Key: r.FirstBad.Key, Problem: r.FirstBad.Problem}
	}
	return out
}

// Report converts back.
func (v VerifyReport) Report() (audit.Report, error) {
	out := audit.Report{OK: v.OK, Records: v.Records, Head: audit.Head{Seq: v.Head.Seq, Hash: v.Head.Hash}}
	if v.FirstBad != nil {
		out.FirstBad = &audit.Break{Seq: v.FirstBad.Seq, Key: v.FirstBad.Key, Problem: v.FirstBad.Problem}
	}
	if out.OK != (out.FirstBad == nil) {
		return audit.Report{}, errors.New("inconsistent verify report: ok must be true exactly when firstBad is absent")
	}
	return out, nil
}
