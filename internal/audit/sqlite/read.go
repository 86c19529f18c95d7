package sqlite

import (
	"bufio"
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/gpuheal/gpuheal/internal/audit"
)

const columns = `seq, key, time, incident, node, policy, kind, phase, action, reason, message,
	provider, request_id, pod, duration, gpus, severity, dry_run, machine, prev_hash, hash`

// Query returns the newest records matching f, oldest first. A Node or
// Incident filter is served by its (node|incident, time) index.
func (s *Store) Query(ctx context.Context, f audit.Filter) ([]audit.Record, error) {
	var where []string
	var args []any
	order := "seq DESC"
	if f.Node != "" {
		where, args = append(where, "node = ?"), append(args, f.Node)
		order = "time DESC, seq DESC"
	}
	if f.Incident != "" {
		where, args = append(where, "incident = ?"), append(args, f.Incident)
		order = "time DESC, seq DESC"
	}
	if !f.Since.IsZero() {
		where, args = append(where, "time >= ?"), append(args, f.Since.UnixNano())
	}
	q := "SELECT " + columns + " FROM records"
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY " + order
	if n := f.EffectiveLimit(); n > 0 {
		q += fmt.Sprintf(" LIMIT %d", n)
	}
	var out []audit.Record
	err := s.scan(ctx, q, args, func(r *audit.Record) error {
		out = append(out, *r)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("querying audit store %s: %w", s.path, err)
	}
	slices.SortFunc(out, func(a, b audit.Record) int { return cmp.Compare(a.Seq, b.Seq) })
	return out, nil
}

// Verify walks every record in Seq order and checks the chain, then the
// last record against the head row (so removing the newest records is
// found too).
func (s *Store) Verify(ctx context.Context) (audit.Report, error) {
	var v audit.Verifier
	err := s.scan(ctx, "SELECT "+columns+" FROM records ORDER BY seq", nil, func(r *audit.Record) error {
		if !v.Add(r) {
			return errStop
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return audit.Report{}, fmt.Errorf("verifying audit store %s: %w", s.path, err)
	}
	var head audit.Head
	if err := s.db.QueryRowContext(ctx, `SELECT seq, hash FROM head WHERE id = 1`).Scan(&head.Seq, &head.Hash); err != nil {
		return audit.Report{}, fmt.Errorf("verifying audit store %s: reading the chain head: %w", s.path, err)
	}
	return v.Finish(&head), nil
}

// Export writes every record as JSON lines, oldest first.
func (s *Store) Export(ctx context.Context, w io.Writer) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	lw := audit.NewLineWriter(bw)
	err := s.scan(ctx, "SELECT "+columns+" FROM records ORDER BY seq", nil, func(r *audit.Record) error {
		return lw.Write(r)
	})
	if err != nil {
		return fmt.Errorf("exporting audit store %s: %w", s.path, err)
	}
	return bw.Flush()
}

type stop struct{}

func (stop) Error() string { return "stop" }

var errStop error = stop{}

// scan runs q and calls fn for each row; the Record passed is reused.
func (s *Store) scan(ctx context.Context, q string, args []any, fn func(*audit.Record) error) error {
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	defer func() { _ = rows.Close() }()
	var (
		r         audit.Record
		seq, t, d int64
		kind      string
		gpus      sql.NullString
		dryRun    bool
	)
	for rows.Next() {
		if err := rows.Scan(&seq, &r.Key, &t, &r.Incident, &r.Node, &r.Policy, &kind, &r.Phase, &r.Action,
			&r.Reason, &r.Message, &r.Provider, &r.RequestID, &r.Pod, &d, &gpus, &r.Severity, &dryRun,
			&r.Machine, &r.PrevHash, &r.Hash); err != nil {
			return err
		}
		r.Seq, r.Time, r.Duration, r.Kind, r.DryRun = uint64(seq), audit.TimeFromNanos(t), time.Duration(d), audit.Kind(kind), dryRun
		r.GPUs = nil
		if gpus.Valid && gpus.String != "" {
			if err := json.Unmarshal([]byte(gpus.String), &r.GPUs); err != nil {
				// An edited gpus column: keep the text so the hash fails
				// on this record rather than the read.
				r.GPUs = []string{gpus.String}
			}
		}
		if err := fn(&r); err != nil {
			return err
		}
	}
	return rows.Err()
}

// Since implements audit.Tailer: the records after seq after, in order.
func (s *Store) Since(ctx context.Context, after uint64, fn func(*audit.Record) error) error {
	err := s.scan(ctx, "SELECT "+columns+" FROM records WHERE seq > ? ORDER BY seq", []any{int64(after)}, fn)
	if err != nil {
		return fmt.Errorf("reading audit store %s after seq %d: %w", s.path, after, err)
	}
	return nil
}
