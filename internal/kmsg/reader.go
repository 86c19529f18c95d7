package kmsg

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// Reader reads records from a stream of lines: a file, stdin, the output
// of dmesg or journalctl. Each line may be in any form (raw records and
// every text form); see Options for what is joined and skipped.
//
// A text record is returned when the line after it has been read (it may
// continue the record) or at the end of input. Memory is bounded by
// Options.MaxLineBytes whatever the input holds.
type Reader struct {
	br *bufio.Reader
	c  core

	// Follow sets holdPartial: a last line with no newline yet is kept
	// until the rest arrives, not taken as a line of its own.
	holdPartial bool
	partial     []byte
	discarding  bool // inside an over-long line, across reads
	err         error
}

// NewReader returns a Reader of r.
func NewReader(r io.Reader, opts Options) *Reader {
	opts = opts.withDefaults()
	rd := &Reader{br: bufio.NewReaderSize(r, opts.MaxLineBytes+1)}
	rd.c.init(opts)
	return rd
}

// Next returns the next record, or io.EOF at the end of input. Reading
// errors are returned once everything read before them has been; after
// io.EOF, Next may be called again and reads on if the input grew.
func (r *Reader) Next() (Record, error) {
	for {
		if rec, ok := r.c.pop(); ok {
			return rec, nil
		}
		if r.err != nil {
			return Record{}, r.err
		}
		line, ok, err := r.readLine()
		if ok {
			r.c.line(line)
		}
		switch {
		case err == nil:
		case errors.Is(err, io.EOF):
			r.c.flush()
			if len(r.c.q) == 0 {
				return Record{}, io.EOF
			}
		default:
			r.c.flush()
			r.err = fmt.Errorf("reading kernel log: %w", err)
		}
	}
}

// Stats returns the counts so far.
func (r *Reader) Stats() Stats { return r.c.stats }

// readLine returns the next line without its newline. A line over
// MaxLineBytes is counted and skipped here in buffer-sized pieces, never
// held whole.
func (r *Reader) readLine() (line []byte, ok bool, err error) {
	maxLen := r.c.opts.MaxLineBytes
	for {
		b, err := r.br.ReadSlice('\n')
		if r.discarding {
			if err == nil {
				r.discarding = false
				continue
			}
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			if !r.holdPartial {
				r.discarding = false
			}
			return nil, false, err
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			r.dropLong(b)
			r.discarding = true
			continue
		case err == nil:
			b = b[:len(b)-1]
		case len(b) == 0 && (len(r.partial) == 0 || r.holdPartial):
			return nil, false, err
		case r.holdPartial:
			if len(r.partial)+len(b) > maxLen {
				r.dropLong(b)
				r.discarding = true
			} else {
				r.partial = append(r.partial, b...)
			}
			return nil, false, err
		}
		if len(r.partial) > 0 {
			if len(r.partial)+len(b) > maxLen {
				r.dropLong(b)
				if err != nil {
					return nil, false, err
				}
				continue
			}
			b = append(r.partial, b...)
			r.partial = b[:0]
		}
		return b, true, err
	}
}

// dropLong counts a line that is too long, given its held start (if
// any) and the piece just read.
func (r *Reader) dropLong(b []byte) {
	if len(r.partial) > 0 {
		b = r.partial
	}
	r.c.tooLong(b)
	r.partial = r.partial[:0]
}

// flushPartial takes a held last line as complete: Follow calls it when
// the file has not grown for a whole poll.
func (r *Reader) flushPartial() {
	if len(r.partial) > 0 {
		r.c.line(r.partial)
		r.partial = r.partial[:0]
	}
	r.c.flush()
}

// reset points the reader at a new stream (a rotated or truncated file),
// keeping counts and sequence tracking.
func (r *Reader) reset(src io.Reader) {
	r.br.Reset(src)
	r.partial, r.discarding, r.err = r.partial[:0], false, nil
	r.c.flush()
}
