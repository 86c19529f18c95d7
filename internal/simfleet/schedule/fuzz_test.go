package schedule

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzReadSchedule feeds schedule files (outside input: written by hand
// or by another version) to the reader: it never panics, and what it
// accepts has known classes, slots, non-negative times and boards, and
// reads back the same after being written.
func FuzzReadSchedule(f *testing.F) {
	for _, seed := range []string{
		`{"at":60000000000,"slot":"n-0","class":"faulty-gpu","gpu":3}`,
		`{"at":1,"slot":"n-1","class":"hbm3-dbe","gpu":0,"board":0}` + "\n" + `{"at":0,"slot":"n-1","class":"hbm3-dbe","gpu":1,"board":4}`,
		`{"at":1,"slot":"n","class":"hbm3-dbe","board":-3}`,
		`{"at":1,"slot":"n","class":"hbm3-dbe","board":null}`,
		`{"at":1,"slot":"n","class":"hbm3-dbe","board":1e99}`,
		"\n\n{}", `[]`, `{"at":"x"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := ReadSchedule(bytes.NewReader(data), "fuzz")
		if err != nil {
			return
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		for i, e := range got {
			if _, ok := ClassNamed(e.Class); !ok || e.Slot == "" || e.At < 0 || e.Board < 0 || (i > 0 && got[i-1].At > e.At) {
				t.Fatalf("accepted %+v", e)
			}
			if err := enc.Encode(e); err != nil {
				t.Fatal(err)
			}
		}
		back, err := ReadSchedule(&buf, "again")
		if err != nil {
			t.Fatalf("written schedule does not read back: %v", err)
		}
		if len(got) > 0 && !cmp.Equal(got, back) {
			t.Fatalf("round trip changed it:\n%s", cmp.Diff(got, back))
		}
	})
}
