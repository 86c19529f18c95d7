package xid

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuheal/gpuheal/internal/finding"
)

func TestLoadFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	if err := os.WriteFile(good, []byte("xid:\n  43: {severity: warning, action: restart-app}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cat, err := LoadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	if e := cat.Lookup(43); e.Severity != finding.Warning || e.Action != finding.ActionRestartApp {
		t.Errorf("43 after override = %s/%s", e.Severity, e.Action)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("xid:\n  43: {severity: dire}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadFile(bad); err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "dire") {
		t.Errorf("bad file error = %v", err)
	}
	if _, err := LoadFile(filepath.Join(dir, "missing.yaml")); err == nil {
		t.Error("missing file loaded")
	}
	if cat, err := LoadFile(""); err != nil || len(cat.Codes()) == 0 {
		t.Errorf("no file: %v", err)
	}
}
