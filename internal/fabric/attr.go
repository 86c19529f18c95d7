package fabric

import (
	"errors"
	"io/fs"
	"os"
	"strconv"
	"syscall"
)

// maxAttrBytes bounds one attribute read: the kernel's sysfs_emit writes
// at most a page, and every attribute read here is a line of a few dozen
// bytes, so a longer file is not what this package reads.
const maxAttrBytes = 4096

var (
	errNotAttr      = errors.New("not a regular file")
	errTooLong      = errors.New("longer than " + strconv.Itoa(maxAttrBytes) + " bytes")
	errBudget       = errors.New("read budget of " + strconv.Itoa(maxFiles) + " files spent")
	errNotAvailable = errors.New("N/A")
)

// file is an attribute that every read reads again: a port's state,
// phys_state or rate, or a counter. A Reader holds it open (h) and
// re-reads it with one pread at offset 0; past the bound on held files,
// or in a one-shot Read, it is not held and path names it.
type file struct {
	name string // the counter's name in its map, the attribute's in errors
	h    handle
	path string
}

// readOnce reads the attribute name of dir and closes it, counting it
// against the read's budget; regular says a directory listing already
// showed it is a regular file. It serves what is read once per device:
// board_id, fw_ver, node_guid, link_layer. The bytes are valid until the
// next read.
func (r *reader) readOnce(dir *os.File, name string, regular bool) ([]byte, error) {
	if r.files >= maxFiles {
		return nil, errBudget
	}
	r.files++
	h, err := openAttr(dir, name, regular)
	if err != nil {
		return nil, err
	}
	defer closeHandle(h)
	return r.readHandle(h, name)
}

// openFile opens the attribute name of dir, reads it, and returns it as
// a file that later reads read again: held open if the reader keeps
// files and the bound allows, else by path (or, in a one-shot Read, not
// at all). opened is false when the file could not be opened, which
// leaves it out of the device's cache.
func (r *reader) openFile(dir *os.File, name string, regular bool) (f file, b []byte, opened bool, err error) {
	f = file{name: name, h: noHandle}
	if r.files >= maxFiles {
		return f, nil, false, errBudget
	}
	r.files++
	h, err := openAttr(dir, name, regular)
	if err != nil {
		return f, nil, false, err
	}
	b, err = r.readHandle(h, name)
	switch {
	case r.hold():
		f.h = h
	case r.cache:
		closeHandle(h)
		f.path = dir.Name() + "/" + name
	default:
		closeHandle(h)
	}
	return f, b, true, err
}

// reread reads f again. A held file costs one system call: sysfs
// regenerates an attribute's content whenever it is read at offset 0
// (seq_read_iter starts over at position 0), which is how GPIO value
// files and the like are polled without reopening them. A file past the
// bound is opened by path, checked again (it may have been replaced by
// something that blocks), read and closed.
func (r *reader) reread(f *file) ([]byte, error) {
	if r.files >= maxFiles {
		return nil, errBudget
	}
	r.files++
	if f.h != noHandle {
		return r.readHandle(f.h, f.name)
	}
	h, err := openAttrPath(f.path)
	if err != nil {
		return nil, err
	}
	defer closeHandle(h)
	return r.readHandle(h, f.name)
}

func (r *reader) readHandle(h handle, name string) ([]byte, error) {
	n, err := r.readFile(h, name, r.buf)
	if err != nil {
		return nil, err
	}
	if n >= len(r.buf) {
		return nil, errTooLong
	}
	return r.buf[:n], nil
}

// hold says whether a file just opened may stay open, and counts it.
func (r *reader) hold() bool {
	if !r.cache || r.held >= r.maxHeld {
		return false
	}
	r.held++
	return true
}

// release closes f if it is held.
func (r *reader) release(f *file) {
	if f.h != noHandle {
		closeHandle(f.h)
		f.h = noHandle
		r.held--
	}
}

func (r *reader) releaseAll(files []file) {
	for i := range files {
		r.release(&files[i])
	}
}

// text reads a one-line attribute (board_id, fw_ver, link_layer, …) as
// trimmed printable ASCII: it becomes a label value, and the kernel
// writes nothing else there.
func (r *reader) text(dir *os.File, name string) (string, error) {
	b, err := r.readOnce(dir, name, false)
	if err != nil {
		return "", err
	}
	return printable(b)
}

// notExposed says whether a read failed because the attribute is not
// there for this device: the file is missing, or the kernel refuses it
// the way it refuses an unsupported counter (EINVAL when the MAD fails,
// EOPNOTSUPP, ENODATA). Such a reading is absent, not a failure; other
// errors (EACCES, EIO, ETIMEDOUT from dead firmware) are reported.
func notExposed(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.EINVAL) ||
		errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.ENODATA)
}

// problem names a failure by its path below the device (or the sysfs
// root) and its cause, without the absolute path that os puts in front.
func problem(rel string, err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		err = le.Err
	}
	return rel + ": " + err.Error()
}

// clip bounds what a hostile file can put into an error message.
func clip(s string) string {
	const most = 64
	if len(s) > most {
		return s[:most] + "…"
	}
	return s
}
