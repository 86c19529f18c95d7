package cli

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gpuheal/gpuheal/internal/audit"
	"github.com/gpuheal/gpuheal/internal/audit/sqlite"
)

// signedHeadOf signs the head of the store at db as the controller would.
func signedHeadOf(t *testing.T, db string) (head []byte, vkey string) {
	t.Helper()
	skey, vkey, err := audit.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	signer, _ := audit.NewSigner(skey)
	s, err := sqlite.Open(context.Background(), db, sqlite.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	n, err := audit.NewNotary(context.Background(), s, audit.NotaryOptions{Signer: signer})
	if err != nil {
		t.Fatal(err)
	}
	return n.Signed(), vkey
}

func TestAuditVerifySinceHead(t *testing.T) {
	db := auditDB(t, time.Now())
	head, vkey := signedHeadOf(t, db)
	headFile := filepath.Join(t.TempDir(), "head")
	keyFile := filepath.Join(t.TempDir(), "key.pub")
	if err := os.WriteFile(headFile, head, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, []byte(vkey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ok := regexp.MustCompile(`\nOK: the log extends the signed head; tree size 16 hash \S{44}\n$`)
	if out, code := runCLI(t, "", "audit", "verify", "--audit-db", db, "--since-head", headFile, "--key", vkey); code != 0 || !ok.MatchString(out) {
		t.Errorf("verify --since-head FILE: exit %d %q", code, out)
	}
	if out, code := runCLI(t, string(head), "audit", "verify", "--audit-db", db, "--since-head", "-", "--key", keyFile); code != 0 || !ok.MatchString(out) {
		t.Errorf("verify --since-head - --key FILE: exit %d %q", code, out)
	}
	if out, code := runCLI(t, "", "audit", "verify", "--audit-db", db, "--since-head", headFile); code != exitUnreadable || !strings.Contains(out, "--since-head needs --key") {
		t.Errorf("verify without --key: exit %d %q", code, out)
	}
	_, otherKey := signedHeadOf(t, auditDB(t, time.Now()))
	if out, code := runCLI(t, "", "audit", "verify", "--audit-db", db, "--since-head", headFile, "--key", otherKey); code != exitUnreadable || !strings.Contains(out, "not by the key given") {
		t.Errorf("verify with another key: exit %d %q", code, out)
	}

	// Cut the last 4 records and move the head row with them: the chain
	// still verifies, the signed head does not.
	raw, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	var hash string
	for _, q := range []string{`DELETE FROM records WHERE seq > 12`, `UPDATE head SET seq = 12, hash = (SELECT hash FROM records WHERE seq = 12)`} {
		if _, err := raw.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	_ = raw.QueryRow(`SELECT hash FROM records WHERE seq = 12`).Scan(&hash)
	_ = raw.Close()
	out, code := runCLI(t, "", "audit", "verify", "--audit-db", db, "--since-head", headFile, "--key", vkey)
	want := "OK: 12 records, head seq 12 hash " + hash + "\nNOT APPEND-ONLY: the log holds 12 records but the signed head of "
	if code != exitChainBroken || !strings.HasPrefix(out, want) || !strings.Contains(out, "covers 16 records: 4 records were removed") {
		t.Errorf("verify of a truncated store: exit %d %q", code, out)
	}
	out, code = runCLI(t, "", "audit", "verify", "--audit-db", db, "--since-head", headFile, "--key", vkey, "-o", "json")
	if code != exitChainBroken || !strings.Contains(out, `"sinceHead": {`) || !strings.Contains(out, `"ok": false`) {
		t.Errorf("verify -o json of a truncated store: exit %d %s", code, out)
	}
}

func TestAuditKeygen(t *testing.T) {
	out, code := runCLI(t, "", "audit", "keygen", "-n", "ops")
	m := regexp.MustCompile(`(?m)^  signer-key: (\S+)\n  verifier-key: (\S+)\n$`).FindStringSubmatch(out)
	if code != 0 || m == nil || !strings.Contains(out, "namespace: ops\n") || !strings.Contains(out, "name: gpuheal-audit-signing-key\n") {
		t.Fatalf("keygen: exit %d\n%s", code, out)
	}
	s, err := audit.NewSigner(m[1])
	if err != nil {
		t.Fatal(err)
	}
	v, err := audit.NewVerifier(m[2])
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := audit.SignHead(audit.TreeHead{Size: 1, Hash: audit.EmptyTreeHash}, s)
	if _, err := audit.OpenHead(msg, v); err != nil {
		t.Errorf("the keys do not pair: %v", err)
	}
}
