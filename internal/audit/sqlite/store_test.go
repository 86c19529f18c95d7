package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuheal/gpuheal/internal/audit"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 123456789, time.UTC)

func open(t testing.TB, path string) *Store {
	t.Helper()
	s, err := Open(context.Background(), path, Options{Now: func() time.Time { return t0 }})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// incident returns the records of one made-up incident on node.
func incident(node string, start time.Time) []audit.Record {
	inc := node + "-1a2b3c"
	rec := func(i int, kind audit.Kind, mod func(*audit.Record)) audit.Record {
		r := audit.Record{
			Key: audit.Key(inc, string(kind), 0), Time: start.Add(time.Duration(i) * time.Second),
			Incident: inc, Node: node, Policy: "default", Kind: kind, Severity: audit.SeverityInfo,
		}
		if mod != nil {
			mod(&r)
		}
		return r
	}
	return []audit.Record{
		rec(0, audit.Detected, func(r *audit.Record) {
			r.Reason, r.Severity = "NvidiaXID79Error", audit.SeverityCritical
			r.GPUs = []string{"GPU-8f6c2d4e-0000-4000-8000-000000000001"}
			r.Message = "AcceleratedHardwareReady=False for 2m0s"
		}),
		rec(1, audit.Decided, func(r *audit.Record) {
			r.Action, r.Reason, r.Machine = "Replace", "rule 0", "4c4c4544-0042-3510-8052-b4c04f4a3232"
		}),
		rec(2, audit.Cordoned, func(r *audit.Record) { r.Phase = "Cordoned" }),
		rec(3, audit.Evicted, func(r *audit.Record) {
			r.Key, r.Pod, r.Phase = audit.Key(inc, "evict/train/worker-0", 0), "train/worker-0", "Draining"
		}),
		rec(4, audit.ActionRequested, func(r *audit.Record) {
			r.Phase, r.Action, r.Provider, r.RequestID = "Replacing", "Replace", "aws", "req-42"
			r.Duration = 1500 * time.Millisecond
		}),
		rec(5, audit.Succeeded, func(r *audit.Record) { r.Phase, r.Duration = "Succeeded", 9*time.Minute+3*time.Second }),
	}
}

func TestWriteQueryExportVerify(t *testing.T) {
	ctx := context.Background()
	s := open(t, filepath.Join(t.TempDir(), "audit.db"))
	a, b := incident("gpu-a", t0), incident("gpu-b", t0.Add(time.Hour))
	if err := s.Write(ctx, a...); err != nil {
		t.Fatal(err)
	}
	for _, r := range b { // one record per call, as the controller does
		if err := s.Write(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	// A record without Time gets the store's clock.
	if err := s.Write(ctx, audit.Record{Key: "breaker/default/1", Kind: audit.Held, Policy: "default", Reason: "BreakerOpen"}); err != nil {
		t.Fatal(err)
	}

	got, err := s.Query(ctx, audit.Filter{Node: "gpu-b"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 6 || got[0].Seq != 7 || got[5].Seq != 12 {
		t.Fatalf("Query(gpu-b) = %d records, seqs %v", len(got), seqs(got))
	}
	// Every field survives the round trip, and the hash is the one
	// computed over what was read back.
	want := b[4]
	want.Seq, want.PrevHash = 11, got[3].Hash
	want.Hash = audit.ComputeHash(&want)
	if diff := cmp.Diff(want, got[4]); diff != "" {
		t.Errorf("record 11 (-want +got):\n%s", diff)
	}

	got, _ = s.Query(ctx, audit.Filter{Incident: "gpu-a-1a2b3c", Limit: 2})
	if diff := cmp.Diff([]uint64{5, 6}, seqs(got)); diff != "" {
		t.Errorf("Query(incident, limit 2) seqs (-want +got):\n%s", diff)
	}
	got, _ = s.Query(ctx, audit.Filter{Node: "gpu-b", Since: t0.Add(time.Hour + 4*time.Second)})
	if diff := cmp.Diff([]uint64{11, 12}, seqs(got)); diff != "" {
		t.Errorf("Query(since) seqs (-want +got):\n%s", diff)
	}
	got, _ = s.Query(ctx, audit.Filter{Limit: 1})
	if len(got) != 1 || got[0].Seq != 13 || !got[0].Time.Equal(t0) || got[0].Kind != audit.Held {
		t.Errorf("Query(limit 1) = %+v", got)
	}

	rep, err := s.Verify(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK || rep.Records != 13 || rep.Head.Seq != 13 {
		t.Fatalf("Verify = %v", rep)
	}

	var buf bytes.Buffer
	if err := s.Export(ctx, &buf); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 13 {
		t.Fatalf("Export wrote %d lines, want 13", len(lines))
	}
	var v audit.Verifier
	for i, l := range lines {
		r, err := audit.ParseLine([]byte(l))
		if err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		v.Add(&r)
	}
	if er := v.Finish(&rep.Head); !er.OK || er.Records != 13 {
		t.Errorf("exported chain: %v", er)
	}
	if !strings.Contains(lines[4], `"duration":"1.5s"`) || !strings.Contains(lines[4], `"requestID":"req-42"`) {
		t.Errorf("export line 5 = %s", lines[4])
	}
}

func seqs(rs []audit.Record) []uint64 {
	var out []uint64
	for _, r := range rs {
		out = append(out, r.Seq)
	}
	return out
}

func TestWriteIsIdempotentByKey(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "audit.db")
	s := open(t, path)
	recs := incident("gpu-a", t0)
	if err := s.Write(ctx, recs[:3]...); err != nil {
		t.Fatal(err)
	}
	// A controller restarted after a crash repeats steps 2 and 3 (with a
	// later time) and goes on; a batch may even repeat a key inside itself.
	again := append([]audit.Record{}, recs[1:]...)
	again[0].Time = t0.Add(time.Hour)
	again = append(again, recs[4])
	if err := s.Write(ctx, again...); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = open(t, path) // and it holds across a reopen
	if err := s.Write(ctx, recs[0]); err != nil {
		t.Fatal(err)
	}
	all, _ := s.Query(ctx, audit.Filter{Limit: -1})
	var keys []string
	for _, r := range all {
		keys = append(keys, r.Key)
	}
	var want []string
	for _, r := range recs {
		want = append(want, r.Key)
	}
	if diff := cmp.Diff(want, keys); diff != "" {
		t.Errorf("stored keys (-want +got):\n%s", diff)
	}
	if !all[1].Time.Equal(t0.Add(time.Second)) {
		t.Errorf("the repeated record replaced the first: time %v", all[1].Time)
	}
	if rep, _ := s.Verify(ctx); !rep.OK || rep.Head.Seq != 6 {
		t.Errorf("Verify = %v", rep)
	}
}

func TestConcurrentWriters(t *testing.T) {
	ctx := context.Background()
	s := open(t, filepath.Join(t.TempDir(), "audit.db"))
	const writers, each = 8, 100
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				r := audit.Record{Key: fmt.Sprintf("w%d/%d", w, i), Kind: audit.Evicted, Node: fmt.Sprintf("n%d", w)}
				if err := s.Write(ctx, r, r); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	rep, err := s.Verify(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK || rep.Records != writers*each || rep.Head.Seq != writers*each {
		t.Fatalf("Verify = %v", rep)
	}
	for w := range writers {
		got, _ := s.Query(ctx, audit.Filter{Node: fmt.Sprintf("n%d", w), Limit: -1})
		if len(got) != each {
			t.Errorf("node n%d: %d records, want %d", w, len(got), each)
		}
	}
}

// tamper builds a store of 10 records, applies sql to it behind the
// store's back and returns what Verify says.
func tamper(t *testing.T, stmts ...string) (audit.Report, []audit.Record) {
	t.Helper()
	ctx := context.Background()
	s := open(t, filepath.Join(t.TempDir(), "audit.db"))
	for i := range 10 {
		r := audit.Record{Key: fmt.Sprintf("inc/step/%d", i), Kind: audit.Evicted, Node: "gpu-a",
			Pod: fmt.Sprintf("ns/p%d", i), Message: "evicted", Time: t0.Add(time.Duration(i) * time.Second)}
		if err := s.Write(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	before, _ := s.Query(ctx, audit.Filter{})
	for _, q := range stmts {
		if _, err := s.db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	rep, err := s.Verify(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return rep, before
}

func TestVerifyFindsTampering(t *testing.T) {
	for _, tc := range []struct {
		name     string
		stmts    []string
		seq      uint64
		key      string
		problem  string
		lastGood uint64
	}{
		{name: "deleted middle record", stmts: []string{`DELETE FROM records WHERE seq = 5`},
			seq: 6, key: "inc/step/5", problem: "records 5..5 are missing", lastGood: 4},
		{name: "two records swapped", stmts: []string{
			`UPDATE records SET seq = -4 WHERE seq = 4`, `UPDATE records SET seq = 4 WHERE seq = 5`, `UPDATE records SET seq = 5 WHERE seq = -4`},
			seq: 4, key: "inc/step/4", problem: "prevHash", lastGood: 3},
		{name: "message edited", stmts: []string{`UPDATE records SET message = 'nothing happened' WHERE seq = 7`},
			seq: 7, key: "inc/step/6", problem: "the record was edited", lastGood: 6},
		{name: "newest records removed", stmts: []string{`DELETE FROM records WHERE seq >= 9`},
			seq: 9, key: "", problem: "the last records were removed", lastGood: 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, _ := tamper(t, tc.stmts...)
			if rep.OK || rep.FirstBad == nil {
				t.Fatalf("Verify = %v, want a break", rep)
			}
			if rep.FirstBad.Seq != tc.seq || rep.FirstBad.Key != tc.key || !strings.Contains(rep.FirstBad.Problem, tc.problem) {
				t.Errorf("first bad = %v, want seq %d key %q problem ~%q", rep.FirstBad, tc.seq, tc.key, tc.problem)
			}
			if rep.Head.Seq != tc.lastGood {
				t.Errorf("last good seq = %d, want %d", rep.Head.Seq, tc.lastGood)
			}
		})
	}
}

func TestOpenRefusesForeignFiles(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()

	garbage := filepath.Join(dir, "garbage.db")
	content := bytes.Repeat([]byte("not a database\n"), 500)
	if err := os.WriteFile(garbage, content, 0o600); err != nil {
		t.Fatal(err)
	}
	foreign := filepath.Join(dir, "foreign.db")
	db, err := sql.Open("sqlite", foreign)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE records (seq INTEGER, note TEXT); INSERT INTO records VALUES (1, 'theirs')`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	foreignBytes, _ := os.ReadFile(foreign)

	stamped := filepath.Join(dir, "stamped.db")
	db, _ = sql.Open("sqlite", stamped)
	if _, err := db.Exec(`PRAGMA application_id = 1234; CREATE TABLE t (x)`); err != nil {
		t.Fatal(err)
	}
	db.Close()

	for _, tc := range []struct{ path, want string }{
		{garbage, "the file is not a SQLite database"},
		{foreign, "no gpuheal marker"},
		{stamped, "belongs to another application"},
	} {
		_, err := Open(ctx, tc.path, Options{})
		if !errors.Is(err, audit.ErrNotAuditStore) || !strings.Contains(err.Error(), tc.path) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open(%s) = %v, want ErrNotAuditStore naming the path and %q", filepath.Base(tc.path), err, tc.want)
		}
	}
	if got, _ := os.ReadFile(garbage); !bytes.Equal(got, content) {
		t.Error("the garbage file was changed")
	}
	if got, _ := os.ReadFile(foreign); !bytes.Equal(got, foreignBytes) {
		t.Error("the foreign database was changed")
	}
	if _, err := os.Stat(foreign + "-wal"); err == nil {
		t.Error("the foreign database was opened in WAL mode")
	}
}

func TestSchemaVersionAndReadOnly(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "audit.db")
	s := open(t, path)
	if err := s.Write(ctx, incident("gpu-a", t0)...); err != nil {
		t.Fatal(err)
	}
	var v, appID int
	var mode string
	s.db.QueryRow(`SELECT max(version) FROM schema_version`).Scan(&v)
	s.db.QueryRow(`PRAGMA application_id`).Scan(&appID)
	s.db.QueryRow(`PRAGMA journal_mode`).Scan(&mode)
	if v != SchemaVersion || appID != applicationID || mode != "wal" {
		t.Errorf("schema version %d, application_id %#x, journal_mode %s", v, appID, mode)
	}

	ro, err := Open(ctx, path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if rep, err := ro.Verify(ctx); err != nil || !rep.OK || rep.Records != 6 {
		t.Errorf("read-only Verify = %v, %v", rep, err)
	}
	if err := ro.Write(ctx, audit.Record{Key: "k", Kind: audit.Held}); err == nil {
		t.Error("read-only Write succeeded")
	}
	if _, err := Open(ctx, filepath.Join(t.TempDir(), "missing.db"), Options{ReadOnly: true}); err == nil {
		t.Error("read-only Open of a missing file succeeded")
	}

	// A store from a newer gpuheal is refused, not downgraded.
	if _, err := s.db.Exec(`INSERT INTO schema_version VALUES (99, 0)`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := Open(ctx, path, Options{}); err == nil || !strings.Contains(err.Error(), "schema version 99") {
		t.Errorf("Open of a newer schema = %v", err)
	}
}

// A store written before the machine column (schema 1) is migrated on
// open: its records keep their hashes (an empty machine is not hashed) and
// new ones carry the machine.
func TestMigrationAddsTheMachineColumn(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "audit.db")
	s := open(t, path)
	old := incident("gpu-a", t0)
	for i := range old {
		old[i].Machine = ""
	}
	if err := s.Write(ctx, old...); err != nil {
		t.Fatal(err)
	}
	// Back to schema 1, as the previous release left it.
	for _, q := range []string{`ALTER TABLE records DROP COLUMN machine`, `DELETE FROM schema_version WHERE version > 1`} {
		if _, err := s.db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	s.Close()

	s = open(t, path)
	defer s.Close()
	if err := s.Write(ctx, incident("gpu-b", t0.Add(time.Hour))...); err != nil {
		t.Fatal(err)
	}
	rep, err := s.Verify(ctx)
	if err != nil || !rep.OK || rep.Records != 12 {
		t.Fatalf("Verify after migration = %+v, %v", rep, err)
	}
	got, err := s.Query(ctx, audit.Filter{Node: "gpu-b"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 6 || got[1].Machine != "4c4c4544-0042-3510-8052-b4c04f4a3232" {
		t.Errorf("gpu-b's Decided record after migration: %+v", got)
	}
}
