package jsonl

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpuheal/gpuheal/internal/audit"
	"github.com/gpuheal/gpuheal/internal/audit/audittest"
)

// Someone who can write the file rewrites its lines.
func TestSignedHeadFindsAttacks(t *testing.T) {
	audittest.Run(t, func(t *testing.T) (audittest.Store, audittest.Tamper) {
		path := filepath.Join(t.TempDir(), "audit.jsonl")
		f, err := OpenFile(path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = f.Close() })
		return f, func(t *testing.T, recs []audit.Record) audit.Reader {
			var buf bytes.Buffer
			lw := audit.NewLineWriter(&buf)
			for i := range recs {
				if err := lw.Write(&recs[i]); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(path, buf.Bytes(), 0o640); err != nil {
				t.Fatal(err)
			}
			return fileReader(path)
		}
	})
}

// fileReader reads the file as the CLI's --audit-jsonl does: it verifies
// the lines as they are, with no head kept by a writer.
type fileReader string

func (p fileReader) Query(context.Context, audit.Filter) ([]audit.Record, error) { return nil, nil }

func (p fileReader) Verify(context.Context) (audit.Report, error) {
	r, err := os.Open(string(p))
	if err != nil {
		return audit.Report{}, err
	}
	defer func() { _ = r.Close() }()
	return Verify(r)
}

func (p fileReader) Export(_ context.Context, w io.Writer) error {
	b, err := os.ReadFile(string(p))
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}
