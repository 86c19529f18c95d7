package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/gpuheal/gpuheal/internal/audit"
)

// Write appends recs in one transaction: all are written or none. A record
// whose Key is already stored is skipped and takes no Seq.
func (s *Store) Write(ctx context.Context, recs ...audit.Record) error {
	if s.ro {
		return fmt.Errorf("audit store %s is open read-only", s.path)
	}
	if len(recs) == 0 {
		return nil
	}
	prepared, err := audit.Prepare(recs, s.now)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.append(ctx, prepared); err != nil {
		return fmt.Errorf("writing %d records to audit store %s: %w", len(recs), s.path, err)
	}
	return nil
}

func (s *Store) append(ctx context.Context, recs []audit.Record) error {
	if !s.headOK {
		if err := s.db.QueryRowContext(ctx, `SELECT seq, hash FROM head WHERE id = 1`).Scan(&s.head.Seq, &s.head.Hash); err != nil {
			return fmt.Errorf("reading the chain head: %w", err)
		}
		s.headOK = true
	}
	head, err := s.appendTx(ctx, recs, s.head)
	if errors.Is(err, errHeadMoved) {
		// Another process appended to the file: start again from its head.
		s.headOK = false
		return s.append(ctx, recs)
	}
	if err != nil {
		// The commit may or may not have happened; read the head again.
		s.headOK = false
		return err
	}
	s.head = head
	return nil
}

// errHeadMoved says the head row is not the one this process saw last.
var errHeadMoved = errors.New("the chain head moved")

// appendTx writes recs after head in one transaction. The head row is
// moved with a condition on its old value, so two processes appending to
// the same file cannot fork the chain.
func (s *Store) appendTx(ctx context.Context, recs []audit.Record, head audit.Head) (_ audit.Head, err error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return head, err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, ignoreDone(tx.Rollback()))
		}
	}()
	start := head
	ins := tx.StmtContext(ctx, s.insert)
	for i := range recs {
		r := &recs[i]
		next := audit.Seal(head, r)
		var gpus any
		if len(r.GPUs) > 0 {
			b, err := json.Marshal(r.GPUs)
			if err != nil {
				return head, err
			}
			gpus = string(b)
		}
		res, err := ins.ExecContext(ctx, int64(r.Seq), r.Key, r.Time.UnixNano(), r.Incident, r.Node, r.Policy,
			string(r.Kind), r.Phase, r.Action, r.Reason, r.Message, r.Provider, r.RequestID, r.Pod,
			int64(r.Duration), gpus, r.Severity, r.DryRun, r.Machine, r.PrevHash, r.Hash)
		if err != nil {
			if isConstraint(err) {
				return head, errHeadMoved // seq taken by another process
			}
			return head, fmt.Errorf("inserting %s: %w", r.Key, err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return head, err
		} else if n == 1 {
			head = next
		}
	}
	if head == start {
		return head, tx.Commit() // every key was already there
	}
	res, err := tx.ExecContext(ctx, `UPDATE head SET seq = ?, hash = ? WHERE id = 1 AND seq = ? AND hash = ?`,
		int64(head.Seq), head.Hash, int64(start.Seq), start.Hash)
	if err != nil {
		return head, fmt.Errorf("moving the chain head: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return head, err
	} else if n != 1 {
		return head, errHeadMoved
	}
	return head, tx.Commit()
}

func isConstraint(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_CONSTRAINT
}

func ignoreDone(err error) error {
	if err == nil || errors.Is(err, sql.ErrTxDone) {
		return nil
	}
	return err
}
