package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/gpuheal/gpuheal/internal/audit"
	"github.com/gpuheal/gpuheal/internal/audit/audittest"
)

// Someone with write access to the file rewrites its rows (and the head
// row to match): only a head signed before finds it.
func TestSignedHeadFindsAttacks(t *testing.T) {
	audittest.Run(t, func(t *testing.T) (audittest.Store, audittest.Tamper) {
		path := filepath.Join(t.TempDir(), "audit.db")
		s := open(t, path)
		return s, func(t *testing.T, recs []audit.Record) audit.Reader {
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			db, err := sql.Open("sqlite", path)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = db.Close() }()
			exec := func(q string, args ...any) {
				t.Helper()
				if _, err := db.Exec(q, args...); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			exec(`DELETE FROM records`)
			var head audit.Head
			for _, r := range recs {
				var gpus any
				if len(r.GPUs) > 0 {
					b, _ := json.Marshal(r.GPUs)
					gpus = string(b)
				}
				exec(`INSERT INTO records (`+columns+`) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`,
					int64(r.Seq), r.Key, r.Time.UnixNano(), r.Incident, r.Node, r.Policy, string(r.Kind), r.Phase, r.Action,
					r.Reason, r.Message, r.Provider, r.RequestID, r.Pod, int64(r.Duration), gpus, r.Severity, r.DryRun,
					r.Machine, r.PrevHash, r.Hash)
				head = audit.Head{Seq: r.Seq, Hash: r.Hash}
			}
			exec(`UPDATE head SET seq = ?, hash = ? WHERE id = 1`, int64(head.Seq), head.Hash)
			ro, err := Open(context.Background(), path, Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = ro.Close() })
			return ro
		}
	})
}
