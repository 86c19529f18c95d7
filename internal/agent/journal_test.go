package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuheal/gpuheal/internal/finding"
)

func TestJournalKeepsFatalFindingsOfThisBoot(t *testing.T) {
	dir := t.TempDir()
	j, replay, err := openJournal(dir, "boot-a")
	if err != nil || len(replay) != 0 {
		t.Fatalf("new journal: %v, %d findings", err, len(replay))
	}
	t0 := time.Date(2026, 11, 30, 1, 0, 0, 0, time.UTC)
	xid79 := finding.Finding{Source: "kmsg", Code: "XID79", Xid: 79, GPU: "0000:18:00.0", Severity: finding.Fatal, Action: finding.ActionReboot, Time: t0}
	warn := finding.Finding{Source: "kmsg", Code: "XID13", Xid: 13, Severity: finding.Warning, Time: t0}
	for _, f := range []finding.Finding{xid79, warn} {
		if err := j.record(f); err != nil {
			t.Fatal(err)
		}
	}

	_, replay, err = openJournal(dir, "boot-a")
	if err != nil || len(replay) != 1 || replay[0].Code != "XID79" || !replay[0].Time.Equal(t0) {
		t.Fatalf("same boot: %v, %+v; want the Xid 79 only", err, replay)
	}
	_, replay, err = openJournal(dir, "boot-b")
	if err != nil || len(replay) != 0 {
		t.Fatalf("after a reboot: %v, %d findings; want none", err, len(replay))
	}
}

func TestJournalIsBounded(t *testing.T) {
	dir := t.TempDir()
	j, _, _ := openJournal(dir, "b")
	j.max = 3
	for i := range 5 {
		if err := j.record(finding.Finding{Code: "XID48", Xid: 48, Severity: finding.Fatal, Message: string(rune('a' + i))}); err != nil {
			t.Fatal(err)
		}
	}
	_, replay, _ := openJournal(dir, "b")
	var got []string
	for _, f := range replay {
		got = append(got, f.Message)
	}
	if strings.Join(got, "") != "cde" {
		t.Fatalf("kept %q, want the newest three cde", got)
	}
}

func TestJournalCorruptStartsEmptyWithError(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, JournalFile), []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	j, replay, err := openJournal(dir, "b")
	if err == nil || !strings.Contains(err.Error(), JournalFile) || len(replay) != 0 || j == nil {
		t.Fatalf("corrupt journal: %v, %d, %v", err, len(replay), j)
	}
}
