package jsonl

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"

	"github.com/gpuheal/gpuheal/internal/audit"
)

// File is an audit.Store in a JSON lines file: appends continue the
// file's chain, reads scan the file.
type File struct {
	*Writer
	path string
	f    *os.File

	tailMu  sync.Mutex
	tailSeq uint64 // Since read up to this seq, ending at byte tailOff
	tailOff int64
}

var _ audit.Store = (*File)(nil)

// OpenFile opens or creates path for appending. The existing lines are
// verified first: a file that is not a JSONL audit chain, or whose chain
// is broken (a torn last line after a crash included), is refused with an
// error naming the path and left as it is.
func OpenFile(path string, o Options) (*File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o640)
	if err != nil {
		return nil, fmt.Errorf("opening audit file %s: %w", path, err)
	}
	w := NewWriter(f, o)
	var v audit.Verifier
	var bad error
	err = Scan(f, func(line int, rec audit.Record, err error) bool {
		if err != nil {
			bad = fmt.Errorf("line %d: %w", line, err)
			return false
		}
		if !v.Add(&rec) {
			return false
		}
		w.keys[rec.Key] = struct{}{}
		return true
	})
	rep := v.Finish(nil)
	switch {
	case err != nil:
		bad = err
	case bad == nil && !rep.OK:
		bad = fmt.Errorf("broken chain at %s", rep.FirstBad)
	case bad == nil:
		bad = checkLastNewline(f)
	}
	if bad != nil {
		_ = f.Close()
		return nil, fmt.Errorf("audit file %s: %w: %w (refusing to append; move it away or fix it)", path, audit.ErrNotAuditStore, bad)
	}
	w.head = rep.Head
	return &File{Writer: w, path: path, f: f}, nil
}

func checkLastNewline(f *os.File) error {
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return err
	}
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, st.Size()-1); err != nil {
		return err
	}
	if b[0] != '\n' {
		return errors.New("the last line is not terminated (a torn write)")
	}
	return nil
}

// Path is the file's path.
func (f *File) Path() string { return f.path }

// Close closes the file.
func (f *File) Close() error {
	if err := f.f.Close(); err != nil {
		return fmt.Errorf("closing audit file %s: %w", f.path, err)
	}
	return nil
}

func (f *File) reader() (io.ReadCloser, error) {
	r, err := os.Open(f.path)
	if err != nil {
		return nil, fmt.Errorf("reading audit file %s: %w", f.path, err)
	}
	return r, nil
}

// Query scans the file.
func (f *File) Query(_ context.Context, flt audit.Filter) ([]audit.Record, error) {
	r, err := f.reader()
	if err != nil {
		return nil, err
	}
	defer func() { _ = r.Close() }()
	out, err := Query(r, flt)
	if err != nil {
		return nil, fmt.Errorf("querying audit file %s: %w", f.path, err)
	}
	return out, nil
}

// Verify checks the file's chain and that it ends at the head this
// process wrote.
func (f *File) Verify(context.Context) (audit.Report, error) {
	r, err := f.reader()
	if err != nil {
		return audit.Report{}, err
	}
	defer func() { _ = r.Close() }()
	rep, err := Verify(r)
	if err != nil {
		return rep, fmt.Errorf("verifying audit file %s: %w", f.path, err)
	}
	if h := f.Head(); rep.OK && rep.Head != h {
		rep.OK = false
		rep.FirstBad = &audit.Break{Seq: rep.Head.Seq + 1, Problem: fmt.Sprintf(
			"the file ends at seq %d but seq %d was written: the last records were removed", rep.Head.Seq, h.Seq)}
		if rep.Head.Seq > h.Seq {
			rep.FirstBad = &audit.Break{Seq: h.Seq + 1, Problem: "records were appended by someone else"}
		}
	}
	return rep, nil
}

// Export copies the file's lines.
func (f *File) Export(_ context.Context, w io.Writer) error {
	r, err := f.reader()
	if err != nil {
		return err
	}
	defer func() { _ = r.Close() }()
	if _, err := io.Copy(w, bufio.NewReader(r)); err != nil {
		return fmt.Errorf("exporting audit file %s: %w", f.path, err)
	}
	return nil
}

// Query reads JSON lines from r and returns the records matching flt,
// oldest first, newest Limit kept; a bad line is an error naming it.
func Query(r io.Reader, flt audit.Filter) ([]audit.Record, error) {
	var out []audit.Record
	var bad error
	err := Scan(r, func(line int, rec audit.Record, err error) bool {
		if err != nil {
			bad = fmt.Errorf("line %d: %w", line, err)
			return false
		}
		if flt.Match(&rec) {
			out = append(out, rec)
		}
		return true
	})
	if err == nil {
		err = bad
	}
	if err != nil {
		return nil, err
	}
	if n := flt.EffectiveLimit(); n > 0 && len(out) > n {
		out = slices.Clone(out[len(out)-n:])
	}
	return out, nil
}

// Since implements audit.Tailer by scanning the file from the start (or
// from where the last call ended, when it asks for the records after it).
func (f *File) Since(_ context.Context, after uint64, fn func(*audit.Record) error) error {
	r, err := os.Open(f.path)
	if err != nil {
		return fmt.Errorf("reading audit file %s: %w", f.path, err)
	}
	defer func() { _ = r.Close() }()
	f.tailMu.Lock()
	defer f.tailMu.Unlock()
	var off int64
	if f.tailSeq == after && f.tailSeq > 0 {
		off = f.tailOff
	}
	if _, err := r.Seek(off, io.SeekStart); err != nil {
		return fmt.Errorf("reading audit file %s: %w", f.path, err)
	}
	cr := &countingReader{r: r, n: off}
	var bad error
	last := after
	err = Scan(cr, func(line int, rec audit.Record, err error) bool {
		if err != nil {
			bad = fmt.Errorf("line %d after offset %d: %w", line, off, err)
			return false
		}
		if rec.Seq <= after {
			return true
		}
		if bad = fn(&rec); bad != nil {
			return false
		}
		last = rec.Seq
		return true
	})
	if err == nil {
		err = bad
	}
	if err != nil {
		f.tailSeq = 0
		return fmt.Errorf("reading audit file %s after seq %d: %w", f.path, after, err)
	}
	// The scanner read whole lines up to EOF; the file ends in a newline
	// (checked at open, and every write ends in one).
	f.tailSeq, f.tailOff = last, cr.n
	return nil
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
