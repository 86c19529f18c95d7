package audit

import (
	"context"
	"errors"
	"io"
	"strings"
	"time"
	"unicode/utf8"
)

// Sink is what the controller writes to.
type Sink interface {
	// Write appends records in order. A record whose Key the store already
	// holds is skipped: it is neither duplicated nor does it break the
	// chain. Backends that can make a call atomic (SQLite) write all or
	// none; others may have written a prefix when they fail, and a retry
	// of the same records skips that prefix.
	Write(ctx context.Context, recs ...Record) error
	Close() error
}

// Reader is the read side, for the CLI and tests.
type Reader interface {
	// Query returns records matching f, oldest first.
	Query(ctx context.Context, f Filter) ([]Record, error)
	// Verify walks the whole chain. A broken chain is a Report with OK
	// false, not an error; errors are I/O.
	Verify(ctx context.Context) (Report, error)
	// Export writes every record, oldest first, as JSON lines.
	Export(ctx context.Context, w io.Writer) error
}

// Store is a Sink that can also be read.
type Store interface {
	Sink
	Reader
}

// ErrNotAuditStore says that a file or table exists but is not an audit
// store of ours; backends refuse it and leave it as it is.
var ErrNotAuditStore = errors.New("not a gpuheal audit store")

// Filter selects records. Empty fields match everything.
type Filter struct {
	Node     string
	Incident string
	// Since keeps records with Time at or after it.
	Since time.Time
	// Limit keeps the newest Limit matches (still returned oldest first);
	// 0 means DefaultLimit, negative means no limit.
	Limit int
}

// DefaultLimit bounds a Query whose Filter sets no Limit.
const DefaultLimit = 1000

// EffectiveLimit is f.Limit with the default applied; 0 means unlimited.
func (f Filter) EffectiveLimit() int {
	switch {
	case f.Limit == 0:
		return DefaultLimit
	case f.Limit < 0:
		return 0
	}
	return f.Limit
}

// Match reports whether r passes f (ignoring Limit).
func (f Filter) Match(r *Record) bool {
	return (f.Node == "" || r.Node == f.Node) &&
		(f.Incident == "" || r.Incident == f.Incident) &&
		(f.Since.IsZero() || !r.Time.Before(f.Since))
}

// Prepare validates recs and fills a zero Time with now; backends call it
// at the top of Write. It returns a copy, leaving the caller's slice alone.
func Prepare(recs []Record, now func() time.Time) ([]Record, error) {
	out := make([]Record, len(recs))
	var t time.Time
	for i := range recs {
		out[i] = recs[i]
		if err := out[i].Validate(); err != nil {
			return nil, err
		}
		if out[i].Time.IsZero() {
			if t.IsZero() {
				t = now()
			}
			out[i].Time = t
		}
		// Stores keep nanoseconds since the epoch in UTC; normalize now so
		// the hash is computed over what will be read back.
		out[i].Time = TimeFromNanos(timeNanos(out[i].Time))
		if len(out[i].GPUs) == 0 {
			out[i].GPUs = nil
		} else {
			out[i].GPUs = append([]string(nil), out[i].GPUs...)
		}
		sanitize(&out[i])
	}
	return out, nil
}

// sanitize replaces invalid UTF-8, which JSON cannot carry: the hash must
// cover exactly what an export writes.
func sanitize(r *Record) {
	for _, p := range []*string{&r.Key, &r.Incident, &r.Node, &r.Policy, &r.Phase, &r.Action, &r.Reason,
		&r.Message, &r.Provider, &r.RequestID, &r.Pod, &r.Severity, &r.Machine} {
		if !utf8.ValidString(*p) {
			*p = strings.ToValidUTF8(*p, "\uFFFD")
		}
	}
	if !utf8.ValidString(string(r.Kind)) {
		r.Kind = Kind(strings.ToValidUTF8(string(r.Kind), "\uFFFD"))
	}
	for i, g := range r.GPUs {
		if !utf8.ValidString(g) {
			r.GPUs[i] = strings.ToValidUTF8(g, "\uFFFD")
		}
	}
}

// Tailer reads the records after a Seq, oldest first; the Notary uses it
// to extend its tree after each write. fn returning an error stops the
// read with that error.
type Tailer interface {
	Since(ctx context.Context, after uint64, fn func(*Record) error) error
}
