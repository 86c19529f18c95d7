package validation

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
)

func capture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// edit is a copy of a capture with one real line changed, for the
// failures no public capture shows.
func edit(t *testing.T, name, old, repl string) []byte {
	t.Helper()
	s := string(capture(t, name))
	if !strings.Contains(s, old) {
		t.Fatalf("%s has no %q to edit", name, old)
	}
	return []byte(strings.Replace(s, old, repl, 1))
}

func wantOutcome(t *testing.T, v Verdict, want v1alpha1.CheckOutcome, msgParts ...string) {
	t.Helper()
	if v.Outcome != want {
		t.Fatalf("outcome %s, want %s: %+v", v.Outcome, want, v)
	}
	for _, p := range msgParts {
		if !strings.Contains(v.Message+" | "+v.Value, p) {
			t.Errorf("message %q / value %q lacks %q", v.Message, v.Value, p)
		}
	}
	if len(v.Excerpt) > MaxExcerpt {
		t.Errorf("excerpt is %d bytes, over %d", len(v.Excerpt), MaxExcerpt)
	}
}
