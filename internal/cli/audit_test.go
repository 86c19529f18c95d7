package cli

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gpuheal/gpuheal/internal/audit/sqlite"

	_ "modernc.org/sqlite" // the "sqlite" driver, to tamper with a store
)

func TestAuditVerifyAndExport(t *testing.T) {
	db := auditDB(t, time.Now())
	s, err := sqlite.Open(context.Background(), db, sqlite.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := s.Verify(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := s.Export(context.Background(), &want); err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	wantOK := "OK: 16 records, head seq 16 hash " + rep.Head.Hash + "\n"

	url := controller(t, db)
	for _, src := range [][]string{{"--audit-db", db}, {"--controller-url", url}} {
		out, code := runCLI(t, "", append([]string{"audit", "verify"}, src...)...)
		if code != 0 || out != wantOK {
			t.Errorf("verify %v: exit %d %q, want %q", src, code, out, wantOK)
		}
		out, code = runCLI(t, "", append([]string{"audit", "export", "--format", "jsonl"}, src...)...)
		if code != 0 || out != want.String() {
			t.Errorf("export %v: exit %d\n%s\nwant\n%s", src, code, out, want.String())
		}
	}

	// An export verifies on its own and reads like the store.
	file := filepath.Join(t.TempDir(), "audit.jsonl")
	if err := os.WriteFile(file, want.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, code := runCLI(t, "", "audit", "verify", "--audit-jsonl", file); code != 0 || out != wantOK {
		t.Errorf("verify of the export: exit %d %q", code, out)
	}
	out, code := runCLI(t, "", "incidents", "--audit-jsonl", file, "--since", "0", "-o", "json")
	if code != 0 || strings.Count(out, `"incident":`) != 3 {
		t.Errorf("incidents from the export: exit %d\n%s", code, out)
	}
	out, code = runCLI(t, "", "audit", "verify", "--audit-db", db, "-o", "json")
	wantJSON := `{"ok":true,"records":16,"headSeq":16,"headHash":"` + rep.Head.Hash + `"}`
	var compact bytes.Buffer
	if err := json.Compact(&compact, []byte(out)); code != 0 || err != nil || compact.String() != wantJSON {
		t.Errorf("verify -o json: exit %d %v %s, want %s", code, err, out, wantJSON)
	}
	if out, code := runCLI(t, "", "audit", "verify", "--audit-db", db, "-o", "wide"); code == 0 || !strings.Contains(out, "want one of table, json, yaml") {
		t.Errorf("verify -o wide: exit %d %q, want the allowed values", code, out)
	}
	if out, code := runCLI(t, "", "audit", "export", "--format", "csv", "--audit-db", db); code == 0 || !strings.Contains(out, `--format "csv"`) {
		t.Errorf("csv: exit %d %q", code, out)
	}
}

func TestAuditVerifyFindsTampering(t *testing.T) {
	db := auditDB(t, time.Now())
	raw, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	res, err := raw.Exec(`UPDATE records SET message = 'nothing happened' WHERE seq = 7`)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		t.Fatalf("tampered with %d rows", n)
	}
	if err := raw.Close(); err != nil {
		t.Fatal(err)
	}
	want := regexp.MustCompile(`^BROKEN after 6 good records: first bad record seq 7 \(key "gpu-a-1111/evict/team/worker-0/0"\): hash [0-9a-f]{12} does not match its content \(computed [0-9a-f]{12}\): the record was edited\n$`)
	for _, src := range [][]string{{"--audit-db", db}, {"--controller-url", controller(t, db)}} {
		out, code := runCLI(t, "", append([]string{"audit", "verify"}, src...)...)
		if code != exitChainBroken || !want.MatchString(out) {
			t.Errorf("verify %v of a tampered store: exit %d %q", src, code, out)
		}
	}

	// A torn JSONL file is broken at its bad line, not unreadable.
	file := filepath.Join(t.TempDir(), "torn.jsonl")
	if err := os.WriteFile(file, []byte(`{"seq":1,"key":"k","kind":"Detected","prevHash":"","hash":"`), 0o600); err != nil {
		t.Fatal(err)
	}
	out, code := runCLI(t, "", "audit", "verify", "--audit-jsonl", file)
	if code != exitChainBroken || !strings.Contains(out, "first bad record seq 1") || !strings.Contains(out, "line 1") {
		t.Errorf("torn file: exit %d %q", code, out)
	}
	out, code = runCLI(t, "", "audit", "verify", "--audit-jsonl", filepath.Join(t.TempDir(), "missing.jsonl"))
	if code != exitUnreadable || !strings.Contains(out, "missing.jsonl") {
		t.Errorf("missing file: exit %d %q", code, out)
	}
}
