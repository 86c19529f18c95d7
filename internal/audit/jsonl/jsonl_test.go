package jsonl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuheal/gpuheal/internal/audit"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func rec(i int) audit.Record {
	return audit.Record{Key: audit.Key("inc", "step", i), Time: t0.Add(time.Duration(i) * time.Second),
		Incident: "inc", Node: fmt.Sprintf("gpu-%d", i%2), Kind: audit.Evicted, Pod: fmt.Sprintf("ns/p%d", i),
		Message: "evicted \"quoted\"\nsecond line", Duration: time.Duration(i) * time.Millisecond}
}

func TestStreamVerifies(t *testing.T) {
	ctx := context.Background()
	var out bytes.Buffer
	w := NewWriter(&out, Options{})
	for i := range 5 {
		if err := w.Write(ctx, rec(i), rec(i)); err != nil { // repeats skipped
			t.Fatal(err)
		}
	}
	if err := w.Write(ctx, rec(2)); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out.String(), "\n"); n != 5 {
		t.Fatalf("%d lines, want 5:\n%s", n, out.String())
	}
	rep, err := Verify(bytes.NewReader(out.Bytes()))
	if err != nil || !rep.OK || rep.Records != 5 || rep.Head != w.Head() {
		t.Fatalf("Verify = %v, %v", rep, err)
	}

	lines := strings.SplitAfter(out.String(), "\n")[:5]
	for _, tc := range []struct {
		name    string
		lines   []string
		seq     uint64
		key     string
		problem string
	}{
		{"deleted", []string{lines[0], lines[1], lines[3], lines[4]}, 4, "inc/step/3", "records 3..3 are missing"},
		{"swapped", []string{lines[0], lines[2], lines[1], lines[3]}, 3, "inc/step/2", "records 2..2 are missing or out of order"},
		{"edited", []string{lines[0], strings.Replace(lines[1], "p1", "p9", 1), lines[2]}, 2, "inc/step/1", "edited"},
		{"garbage", []string{lines[0], "{not json\n", lines[2]}, 2, "", "line 2"},
		{"unknown field", []string{lines[0], strings.Replace(lines[1], `{"seq"`, `{"extra":1,"seq"`, 1)}, 2, "", "unknown field"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := Verify(strings.NewReader(strings.Join(tc.lines, "")))
			if err != nil {
				t.Fatal(err)
			}
			if rep.OK || rep.FirstBad.Seq != tc.seq || rep.FirstBad.Key != tc.key || !strings.Contains(rep.FirstBad.Problem, tc.problem) {
				t.Errorf("Verify = %v, want seq %d key %q problem ~%q", rep, tc.seq, tc.key, tc.problem)
			}
		})
	}
}

func TestFileContinuesAndRefuses(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	f, err := OpenFile(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Write(ctx, rec(0), rec(1), rec(2)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	f, err = OpenFile(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Write(ctx, rec(2), rec(3)); err != nil { // 2 is known from the file
		t.Fatal(err)
	}
	rep, err := f.Verify(ctx)
	if err != nil || !rep.OK || rep.Records != 4 {
		t.Fatalf("Verify = %v, %v", rep, err)
	}
	got, err := f.Query(ctx, audit.Filter{Node: "gpu-1"})
	if err != nil || len(got) != 2 || got[0].Seq != 2 || got[1].Seq != 4 || got[1].Message != rec(3).Message {
		t.Fatalf("Query = %+v, %v", got, err)
	}
	var exp bytes.Buffer
	if err := f.Export(ctx, &exp); err != nil || strings.Count(exp.String(), "\n") != 4 {
		t.Fatalf("Export = %q, %v", exp.String(), err)
	}
	f.Close()

	for name, content := range map[string]string{
		"garbage": "hello\n",
		"torn":    exp.String() + `{"seq":5,"key":"x"`,
		"broken":  strings.Join(strings.SplitAfter(exp.String(), "\n")[1:], ""),
	} {
		p := filepath.Join(t.TempDir(), name+".jsonl")
		os.WriteFile(p, []byte(content), 0o600)
		if _, err := OpenFile(p, Options{}); !errors.Is(err, audit.ErrNotAuditStore) || !strings.Contains(err.Error(), p) {
			t.Errorf("OpenFile(%s) = %v", name, err)
		}
		if b, _ := os.ReadFile(p); string(b) != content {
			t.Errorf("%s was changed", name)
		}
	}
}

// FuzzVerify: whatever the input, Verify neither panics nor calls a
// changed stream good.
func FuzzVerify(f *testing.F) {
	var out bytes.Buffer
	w := NewWriter(&out, Options{})
	_ = w.Write(context.Background(), rec(0), rec(1), rec(2))
	f.Add(out.Bytes())
	f.Add([]byte("{}\n"))
	f.Add([]byte(""))
	good := out.String()
	f.Fuzz(func(t *testing.T, b []byte) {
		rep, err := Verify(bytes.NewReader(b))
		if err != nil {
			return
		}
		if !rep.OK || rep.Head != w.Head() {
			return
		}
		// It verified to the original head: then it must say what the
		// original said, whitespace aside.
		var re bytes.Buffer
		lw := audit.NewLineWriter(&re)
		_ = Scan(bytes.NewReader(b), func(_ int, r audit.Record, _ error) bool { return lw.Write(&r) == nil })
		if re.String() != good {
			t.Fatalf("a changed stream verified with the original head:\n%q", b)
		}
	})
}
