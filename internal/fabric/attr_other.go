//go:build !linux

package fabric

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
)

// readAttrFile reads the attribute name of dir into buf and returns its
// length; len(buf) bytes mean the file was too long. sysfs is Linux's:
// elsewhere this only serves tests and trees copied off a node.
func readAttrFile(dir *os.File, name string, buf []byte, _ bool) (int, error) {
	f, err := os.OpenFile(filepath.Join(dir.Name(), name), os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return 0, err
	}
	defer func() { _ = f.Close() }()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	if !fi.Mode().IsRegular() {
		return 0, errNotAttr
	}
	n, err := io.ReadFull(f, buf)
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		err = nil
	}
	return n, err
}

// openDir opens a directory for listing and for the reads above.
func openDir(path string) (*os.File, error) { return os.Open(path) }

// openDirAt opens the directory name below the open directory parent.
func openDirAt(parent *os.File, name string) (*os.File, error) {
	return os.Open(filepath.Join(parent.Name(), name))
}
