package kmsg

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"
)

// Follow reads the file at path as it grows, like tail -F, calling emit
// for each record: NewFollower(path, opts).Run(ctx, emit).
func Follow(ctx context.Context, path string, opts Options, emit func(Record) error) error {
	return NewFollower(path, opts).Run(ctx, emit)
}

// Follower reads a growing log file, raw records or text. It polls (on
// Options.Clock, so tests step a fake clock) rather than using inotify:
// one stat per second costs nothing and works on every filesystem,
// overlay and NFS included.
//
// A file replaced under the path (rotation) is read to its end, then the
// new file from its start; a file that shrank (copytruncate) is read
// again from its start. A last line with no newline is held until the
// file has not grown for a whole poll, then taken as complete. A text
// record is finished at the end of each poll, so the indented lines of a
// multi-line record that arrive a poll later become records of their own.
type Follower struct {
	path string
	opts Options
	rd   *Reader
	file *os.File
	cr   countingReader
	// skipOld is Options.FromEnd until the first poll ends: a file that
	// appears later holds only new lines.
	skipOld bool

	mu    sync.Mutex
	stats Stats

	afterPoll func() // tests: called after each poll, to step in lockstep
}

// NewFollower returns a Follower of path; the file need not exist yet.
func NewFollower(path string, opts Options) *Follower {
	return &Follower{path: path, opts: opts.withDefaults(), skipOld: opts.FromEnd}
}

// Run reads the file, then polls every Options.PollInterval until ctx
// ends (it then returns nil). It returns emit's first error, or an error
// opening or reading the file other than its absence.
func (f *Follower) Run(ctx context.Context, emit func(Record) error) error {
	t := f.opts.Clock.NewTicker(f.opts.PollInterval)
	defer t.Stop()
	defer f.close()
	for {
		if err := f.poll(emit); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		}
	}
}

// Stats returns the counts so far; safe to call while Run runs.
func (f *Follower) Stats() Stats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stats
}

func (f *Follower) poll(emit func(Record) error) error {
	defer f.publish()
	defer func() { f.skipOld = false }()
	if f.file != nil {
		if err := f.checkReplaced(emit); err != nil {
			return err
		}
	}
	if f.file == nil {
		if err := f.open(); err != nil || f.file == nil {
			return err
		}
	}
	before := f.cr.n
	if err := f.drain(emit); err != nil {
		return err
	}
	if f.cr.n == before {
		f.rd.flushPartial()
		return f.drain(emit)
	}
	return nil
}

// checkReplaced handles rotation and truncation of the open file.
func (f *Follower) checkReplaced(emit func(Record) error) error {
	cur, err := f.file.Stat()
	if err != nil {
		return fmt.Errorf("following %s: %w", f.path, err)
	}
	st, err := os.Stat(f.path)
	switch {
	case err == nil && !os.SameFile(st, cur):
		if err := f.drain(emit); err != nil {
			return err
		}
		f.rd.flushPartial()
		if err := f.drain(emit); err != nil {
			return err
		}
		f.close()
	case cur.Size() < f.cr.n:
		if _, err := f.file.Seek(0, io.SeekStart); err != nil {
			return fmt.Errorf("following %s after truncation: %w", f.path, err)
		}
		f.cr.n = 0
		f.rd.reset(&f.cr)
	}
	// A path that is gone (renamed, not yet recreated) is no change:
	// the old file may still be written.
	return nil
}

func (f *Follower) open() error {
	file, err := os.Open(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("following %s: %w", f.path, err)
	}
	var off int64
	if f.skipOld {
		if off, err = file.Seek(0, io.SeekEnd); err != nil {
			_ = file.Close()
			return fmt.Errorf("following %s: %w", f.path, err)
		}
	}
	f.file = file
	f.cr = countingReader{r: file, n: off}
	if f.rd == nil {
		f.rd = NewReader(&f.cr, f.opts)
		f.rd.holdPartial = true
	} else {
		f.rd.reset(&f.cr)
	}
	return nil
}

// drain hands over every record read so far and stops at the file's end.
func (f *Follower) drain(emit func(Record) error) error {
	for {
		rec, err := f.rd.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("following %s: %w", f.path, err)
		}
		if err := emit(rec); err != nil {
			return err
		}
	}
}

func (f *Follower) close() {
	if f.file != nil {
		_ = f.file.Close()
		f.file = nil
	}
}

func (f *Follower) publish() {
	if f.rd != nil {
		f.mu.Lock()
		f.stats = f.rd.Stats()
		f.mu.Unlock()
	}
	if f.afterPoll != nil {
		f.afterPoll()
	}
}

// countingReader tracks the file offset, to notice truncation.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
