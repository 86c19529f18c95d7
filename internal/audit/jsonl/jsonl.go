// Package jsonl writes the audit chain as JSON lines, to stdout for a log
// shipper or to a file, and verifies such a stream.
//
// One line is one audit.Record in its JSON form (audit.Record.MarshalJSON),
// with seq, prevHash and hash, so a copy shipped elsewhere can be verified
// on its own with Verify. A stream written to stdout starts a new chain at
// seq 1 when the process starts; a file continues its chain.
package jsonl

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/gpuheal/gpuheal/internal/audit"
)

// Options configures a Writer.
type Options struct {
	// Now fills a zero Record.Time (default time.Now).
	Now func() time.Time
}

// Writer is an audit.Sink that writes JSON lines to an io.Writer. Each
// Write call makes one call to the underlying writer. It remembers the
// keys it wrote to skip repeats; a file's keys are read when it is opened.
type Writer struct {
	mu   sync.Mutex
	w    io.Writer
	head audit.Head
	keys map[string]struct{}
	now  func() time.Time
	buf  bytes.Buffer
}

var _ audit.Sink = (*Writer)(nil)

// NewWriter starts a chain at seq 1 on w (os.Stdout, say).
func NewWriter(w io.Writer, o Options) *Writer {
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Writer{w: w, keys: map[string]struct{}{}, now: o.Now}
}

// Write implements audit.Sink.
func (w *Writer) Write(_ context.Context, recs ...audit.Record) error {
	prepared, err := audit.Prepare(recs, w.now)
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Reset()
	head := w.head
	var added []string
	seen := map[string]struct{}{}
	lw := audit.NewLineWriter(&w.buf)
	for i := range prepared {
		r := &prepared[i]
		if _, ok := w.keys[r.Key]; ok {
			continue
		}
		if _, ok := seen[r.Key]; ok {
			continue
		}
		seen[r.Key] = struct{}{}
		head = audit.Seal(head, r)
		if err := lw.Write(r); err != nil {
			return fmt.Errorf("encoding audit record %s: %w", r.Key, err)
		}
		added = append(added, r.Key)
	}
	if len(added) == 0 {
		return nil
	}
	if _, err := w.w.Write(w.buf.Bytes()); err != nil {
		return fmt.Errorf("writing %d audit records: %w", len(added), err)
	}
	w.head = head
	for _, k := range added {
		w.keys[k] = struct{}{}
	}
	return nil
}

// Close implements audit.Sink; it does not close the underlying writer.
func (w *Writer) Close() error { return nil }

// Head is the last record written.
func (w *Writer) Head() audit.Head {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.head
}

// MaxLine bounds one line when reading (a record is far smaller).
const MaxLine = 1 << 20

// Scan calls fn for every line of r, parsed; a line that does not parse is
// passed with its error (and fn decides whether to go on).
func Scan(r io.Reader, fn func(line int, rec audit.Record, err error) bool) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), MaxLine)
	n := 0
	for sc.Scan() {
		n++
		b := sc.Bytes()
		if len(bytes.TrimSpace(b)) == 0 {
			if !fn(n, audit.Record{}, fmt.Errorf("empty line")) {
				return nil
			}
			continue
		}
		rec, err := audit.ParseLine(b)
		if !fn(n, rec, err) {
			return nil
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("line %d: %w", n+1, err)
	}
	return nil
}

// Verify reads a JSONL chain (a file or an export) and checks it. A line
// that does not parse breaks the chain there. A JSONL stream keeps no head
// apart from its lines, so records cut from its end are not detected;
// compare Report.Head with the store's.
func Verify(r io.Reader) (audit.Report, error) {
	var v audit.Verifier
	err := Scan(r, func(line int, rec audit.Record, err error) bool {
		if err != nil {
			v.Fail(&audit.Break{Seq: v.Finish(nil).Head.Seq + 1, Problem: fmt.Sprintf("line %d: %v", line, err)})
			return false
		}
		return v.Add(&rec)
	})
	if err != nil {
		return audit.Report{}, err
	}
	return v.Finish(nil), nil
}
