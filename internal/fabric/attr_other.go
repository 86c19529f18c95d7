//go:build !linux

package fabric

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
)

// sysfs is Linux's: elsewhere the functions below only serve tests and
// trees copied off a node, with the os package's files.

// handle is an open attribute file.
type handle = *os.File

var noHandle handle

func openAttr(dir *os.File, name string, _ bool) (handle, error) {
	return openAttrPath(filepath.Join(dir.Name(), name))
}

func openAttrPath(path string) (handle, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = errNotAttr
	}
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	return f, nil
}

// readAt0 reads h from offset 0 into buf; a full buf means the file was
// too long.
func readAt0(h handle, _ string, buf []byte) (int, error) {
	n, err := h.ReadAt(buf, 0)
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return n, err
}

func closeHandle(h handle) { _ = h.Close() }

// dirents lists the open directory f from its start, calling fn with
// each entry's name; inode numbers are not known here (0).
func dirents(f *os.File, _ []byte, fn func(name []byte, ino uint64) bool) error {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	entries, err := f.ReadDir(-1)
	for _, e := range entries {
		if !fn([]byte(e.Name()), 0) {
			break
		}
	}
	return err
}

// openDir opens a directory for listing and for the reads above.
func openDir(path string) (*os.File, error) { return os.Open(path) }

// openDirAt opens the directory name below the open directory parent.
func openDirAt(parent *os.File, name string) (*os.File, error) {
	return os.Open(filepath.Join(parent.Name(), name))
}
