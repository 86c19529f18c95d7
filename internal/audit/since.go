package audit

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"

	"golang.org/x/mod/sumdb/note"
)

// maxLine bounds one exported line (a record is far smaller).
const maxLine = 1 << 20

// ReadTree reads JSON lines (an export, a JSONL file) into a Merkle tree.
// The first line that does not parse or does not continue the chain is an
// error naming the line; the tree holds the records before it.
func ReadTree(r io.Reader) (*Tree, error) {
	t := &Tree{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	line := 0
	for sc.Scan() {
		line++
		rec, err := ParseLine(sc.Bytes())
		if err == nil {
			err = t.Add(&rec)
		}
		if err != nil {
			return t, &BrokenError{Err: fmt.Errorf("line %d: %w", line, err)}
		}
	}
	if err := sc.Err(); err != nil {
		return t, fmt.Errorf("line %d: %w", line+1, err)
	}
	return t, nil
}

// BrokenError is a log that does not read as a chain from seq 1: a line
// that does not parse, or a record that does not continue the chain.
type BrokenError struct{ Err error }

func (e *BrokenError) Error() string { return e.Err.Error() }
func (e *BrokenError) Unwrap() error { return e.Err }

// TreeOf exports r and reads the export into a tree.
func TreeOf(ctx context.Context, r Reader) (*Tree, error) {
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(r.Export(ctx, pw)) }()
	t, err := ReadTree(pr)
	_ = pr.CloseWithError(errors.New("stopped reading"))
	return t, err
}

// SinceHeadError says that the log does not extend a signed head given to
// VerifySince: it was truncated, rewritten, lost its first records or was
// wiped.
type SinceHeadError struct{ Err error }

func (e *SinceHeadError) Error() string { return e.Err.Error() }
func (e *SinceHeadError) Unwrap() error { return e.Err }

// VerifySince checks that the log r extends the earlier signed head (a
// --since-head file): the head's signature under v, then every record from
// seq 1 through the chain into the tree, then the tree against the head.
// It returns the log's current tree head. A log that does not extend the
// head is a *SinceHeadError; a head that is not signed by v or does not
// parse is a plain error, and so is a log that cannot be read.
func VerifySince(ctx context.Context, r Reader, signed []byte, v note.Verifier) (TreeHead, error) {
	since, err := OpenHead(signed, v)
	if err != nil {
		return TreeHead{}, err
	}
	t, err := TreeOf(ctx, r)
	var broken *BrokenError
	switch {
	case errors.As(err, &broken):
		return TreeHead{}, &SinceHeadError{Err: fmt.Errorf("the log breaks after %d good records: %w", t.Size(), err)}
	case err != nil:
		return TreeHead{}, fmt.Errorf("reading the audit log: %w", err)
	}
	if err := t.CheckHead(since); err != nil {
		return TreeHead{}, &SinceHeadError{Err: err}
	}
	return t.Head(t.Size())
}
