package agent

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
)

// A request taken survives a restart: journaled before the reset, it is
// unfinished when the journal is opened again, and answered once.
func TestResetJournalSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	j, err := openResetJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	gpus := []v1alpha1.GPURef{{Index: 3, UUID: "GPU-3"}}
	if err := j.start("inc-reset-1", gpus, metav1.Now()); err != nil {
		t.Fatal(err)
	}
	if err := j.start("inc-reset-1", gpus, metav1.Now()); err == nil {
		t.Error("one request ID journaled twice")
	}
	again, err := openResetJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	if u := again.unfinished(); len(u) != 1 || u[0].RequestID != "inc-reset-1" || u[0].GPUs[0].UUID != "GPU-3" {
		t.Fatalf("unfinished after a restart: %+v", u)
	}
	if err := again.finish(&v1alpha1.GPUResetReport{RequestID: "inc-reset-1", Outcome: v1alpha1.GPUResetFailed, Reason: v1alpha1.ResetReasonInterrupted}); err != nil {
		t.Fatal(err)
	}
	third, err := openResetJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	e, ok := third.lookup("inc-reset-1")
	if !ok || e.Report == nil || e.Report.Reason != v1alpha1.ResetReasonInterrupted || len(third.unfinished()) != 0 {
		t.Errorf("after the answer: %+v %v, unfinished %v", e, ok, third.unfinished())
	}
}

// The journal is bounded, dropping the oldest answered requests first;
// an unreadable one is an error (the agent then takes no request).
func TestResetJournalBoundAndCorruption(t *testing.T) {
	dir := t.TempDir()
	j, _ := openResetJournal(dir)
	if err := j.start("unanswered", nil, metav1.Now()); err != nil {
		t.Fatal(err)
	}
	for i := range resetJournalMax + 5 {
		id := "r-" + strconv.Itoa(i)
		if err := j.start(id, nil, metav1.Now()); err != nil {
			t.Fatal(err)
		}
		if err := j.finish(&v1alpha1.GPUResetReport{RequestID: id, Outcome: v1alpha1.GPUResetSucceeded}); err != nil {
			t.Fatal(err)
		}
	}
	if len(j.entries) != resetJournalMax {
		t.Errorf("%d entries, want %d", len(j.entries), resetJournalMax)
	}
	if _, ok := j.lookup("unanswered"); !ok {
		t.Error("the unanswered request was dropped before answered ones")
	}
	if _, ok := j.lookup("r-0"); ok {
		t.Error("the oldest answered request was kept")
	}
	if err := os.WriteFile(filepath.Join(dir, ResetJournalFile), []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := openResetJournal(dir); err == nil || !strings.Contains(err.Error(), ResetJournalFile) {
		t.Errorf("corrupt journal: %v, want an error naming the file", err)
	}
	mem, err := openResetJournal("")
	if err != nil || mem.start("x", nil, metav1.Now()) != nil {
		t.Errorf("in-memory journal: %v", err)
	}
}

// The journal's rename is made durable by syncing its directory; a
// directory that cannot be synced is an error naming it (the request is
// then refused, not run unjournaled). The entry survives a reopen.
func TestResetJournalSyncsItsDirectory(t *testing.T) {
	dir := t.TempDir()
	if err := syncDir(dir); err != nil {
		t.Fatalf("syncing %s: %v", dir, err)
	}
	missing := filepath.Join(dir, "gone")
	if err := syncDir(missing); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("syncing a missing directory: %v, want an error naming it", err)
	}
	j, _ := openResetJournal(dir)
	if err := j.start("inc-reset-2", nil, metav1.Now()); err != nil {
		t.Fatal(err)
	}
	again, err := openResetJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := again.lookup("inc-reset-2"); !ok {
		t.Error("the taken request is gone after a reopen")
	}
	if _, err := os.Stat(filepath.Join(dir, ResetJournalFile+".tmp")); err == nil {
		t.Error("the temporary file was left behind")
	}
}
