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

// attr reads the attribute name of dir, counting it against the Read's
// budget; regular says a directory listing already showed it is a regular
// file. The bytes are valid until the next read.
func (r *reader) attr(dir *os.File, name string, regular bool) ([]byte, error) {
	if r.files >= maxFiles {
		return nil, errBudget
	}
	r.files++
	n, err := r.readFile(dir, name, r.buf, regular)
	if err != nil {
		return nil, err
	}
	if n >= len(r.buf) {
		return nil, errTooLong
	}
	return r.buf[:n], nil
}

// text reads a one-line attribute (board_id, fw_ver, link_layer, …) as
// trimmed printable ASCII: it becomes a label value, and the kernel
// writes nothing else there.
func (r *reader) text(dir *os.File, name string) (string, error) {
	b, err := r.attr(dir, name, false)
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
	const max = 64
	if len(s) > max {
		return s[:max] + "…"
	}
	return s
}
