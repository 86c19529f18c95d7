package fabric

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// openFDs counts the process's open descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}

// The descriptors a Reader holds are its files and the class directory;
// a device that goes away takes its own with it, and Close releases the
// rest. Read holds none after it returns. Not parallel: it counts the
// whole process's descriptors, and no parallel test runs beside it.
func TestReaderReleasesFDs(t *testing.T) {
	root := fixture(t, "efa-p4d")
	before := openFDs(t)
	if _, err := Read(context.Background(), ReadOptions{Root: root}); err != nil {
		t.Fatal(err)
	}
	if n := openFDs(t); n != before {
		t.Errorf("Read left %d descriptors open", n-before)
	}

	rd := NewReader(ReadOptions{Root: root})
	for range 2 {
		if _, err := rd.Read(context.Background()); err != nil {
			t.Fatal(err)
		}
		if n := openFDs(t); n != before+efaHeld+1 {
			t.Errorf("a Reader holds %d descriptors, want %d", n-before, efaHeld+1)
		}
	}
	if err := os.Remove(filepath.Join(root, "class/infiniband/rdmap32s27")); err != nil {
		t.Fatal(err)
	}
	if _, err := rd.Read(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := openFDs(t); n != before+efaHeld-20+1 {
		t.Errorf("after a device went away a Reader holds %d descriptors, want %d", n-before, efaHeld-20+1)
	}
	if err := rd.Close(); err != nil {
		t.Fatal(err)
	}
	if n := openFDs(t); n != before {
		t.Errorf("Close left %d descriptors open", n-before)
	}

	// Past the bound, only the bound is held.
	rd = NewReader(ReadOptions{Root: root})
	rd.r.maxHeld = 7
	for range 2 {
		if _, err := rd.Read(context.Background()); err != nil {
			t.Fatal(err)
		}
		if n := openFDs(t); n != before+7+1 {
			t.Errorf("bound 7: a Reader holds %d descriptors, want 8", n-before)
		}
	}
	_ = rd.Close()
	if n := openFDs(t); n != before {
		t.Errorf("Close left %d descriptors open", n-before)
	}
}
