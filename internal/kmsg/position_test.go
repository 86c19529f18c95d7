package kmsg

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func rawLines(from, to uint64) string {
	var b strings.Builder
	for s := from; s <= to; s++ {
		fmt.Fprintf(&b, "4,%d,%d,-;NVRM: Xid (PCI:0000:18:00): 79, record %d\n", s, 1000000+s*10, s)
	}
	return b.String()
}

// readFrom reads path with the position saved in dir, then saves the
// position of the last record read, as the agent does.
func readFrom(t *testing.T, path, dir, boot string) []uint64 {
	t.Helper()
	pos, err := LoadPosition(dir)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var seqs []uint64
	for _, r := range readAll(t, NewReader(f, Options{Resume: &pos, BootID: boot})) {
		seqs = append(seqs, r.Seq)
		pos = Position{BootID: boot, Seq: r.Seq}
	}
	if err := SavePosition(dir, pos); err != nil {
		t.Fatal(err)
	}
	return seqs
}

func seqRange(from, to uint64) []uint64 {
	var out []uint64
	for s := from; s <= to; s++ {
		out = append(out, s)
	}
	return out
}

func appendFile(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// After a restart nothing is reported twice and nothing is skipped;
// after a reboot everything of the new boot is read.
func TestResumeAcrossRestartAndReboot(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "kmsg.log")
	appendFile(t, log, rawLines(0, 9))
	if got := readFrom(t, log, dir, "boot-1"); !cmp.Equal(got, seqRange(0, 9)) {
		t.Fatalf("first run read %v", got)
	}
	appendFile(t, log, rawLines(10, 14))
	if got := readFrom(t, log, dir, "boot-1"); !cmp.Equal(got, seqRange(10, 14)) {
		t.Errorf("after restart read %v, want 10-14", got)
	}
	if got := readFrom(t, log, dir, "boot-1"); len(got) != 0 {
		t.Errorf("restart with nothing new read %v", got)
	}
	// Reboot: the ring starts over at 0 with a new boot id.
	if err := os.WriteFile(log, []byte(rawLines(0, 3)), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := readFrom(t, log, dir, "boot-2"); !cmp.Equal(got, seqRange(0, 3)) {
		t.Errorf("after reboot read %v, want 0-3", got)
	}
	if p, _ := LoadPosition(dir); p != (Position{BootID: "boot-2", Seq: 3}) {
		t.Errorf("saved position %+v", p)
	}
}

func TestResumeFilter(t *testing.T) {
	seq := func(s uint64) Record { return Record{Seq: s, HasSeq: true} }
	same := ResumeFilter(Position{BootID: "b", Seq: 10}, "b")
	if same(seq(9)) || same(seq(10)) || !same(seq(11)) || !same(Record{}) {
		t.Error("same boot: want only seq > 10 and records without seq")
	}
	other := ResumeFilter(Position{BootID: "a", Seq: 10}, "b")
	none := ResumeFilter(Position{}, "")
	if !other(seq(0)) || !other(seq(10)) || !none(seq(0)) {
		t.Error("another boot or no position: want everything")
	}
}

func TestPositionFile(t *testing.T) {
	dir := t.TempDir()
	if p, err := LoadPosition(dir); err != nil || p != (Position{}) {
		t.Errorf("missing file: %+v, %v", p, err)
	}
	want := Position{BootID: "716646db-411b-4c09-9777-489635915fbd", Seq: 1 << 40}
	for range 2 { // the second save replaces the first
		if err := SavePosition(dir, want); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := LoadPosition(dir); err != nil || got != want {
		t.Errorf("LoadPosition = %+v, %v; want %+v", got, err, want)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("state dir holds %d files, want only %s", len(ents), PositionFile)
	}
	if err := os.WriteFile(filepath.Join(dir, PositionFile), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadPosition(dir); err == nil {
		t.Error("corrupt file: want an error")
	}
	if err := SavePosition(filepath.Join(dir, "missing"), want); err == nil {
		t.Error("missing state dir: want an error")
	}
}

func TestReadBootID(t *testing.T) {
	path := filepath.Join(t.TempDir(), "boot_id")
	if err := os.WriteFile(path, []byte("716646db-411b-4c09-9777-489635915fbd\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if id, err := ReadBootID(path); err != nil || id != "716646db-411b-4c09-9777-489635915fbd" {
		t.Errorf("ReadBootID = %q, %v", id, err)
	}
	if err := os.WriteFile(path, []byte("\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadBootID(path); err == nil {
		t.Error("empty boot id: want an error")
	}
	if _, err := ReadBootID(path + ".missing"); err == nil {
		t.Error("missing file: want an error")
	}
}
