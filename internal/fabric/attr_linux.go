package fabric

import (
	"encoding/binary"
	"errors"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// handle is an open attribute file: a bare descriptor, not an *os.File,
// which would cost an allocation, a cleanup and the runtime's poller
// bookkeeping for each of a node's several hundred held files.
type handle int

const noHandle handle = -1

// openAttr opens the attribute name of dir. It is opened relative to its
// directory, so that the kernel walks one path component instead of the
// dozen (and the class/infiniband symlink) of a full path. regular says
// that a listing of dir showed name is a regular file, so it is not
// checked again.
//
// O_NONBLOCK and the check that the opened file is a regular one keep a
// FIFO planted in the tree from blocking the agent and a device file
// (/dev/zero) from feeding it. One read is enough: sysfs hands over the
// whole attribute at once.
func openAttr(dir *os.File, name string, regular bool) (handle, error) {
	return openAttrFd(int(dir.Fd()), name, regular)
}

// openAttrPath opens an attribute by its full path: the fallback for
// files past the bound on held ones.
func openAttrPath(path string) (handle, error) {
	return openAttrFd(unix.AT_FDCWD, path, false)
}

func openAttrFd(dirfd int, name string, regular bool) (handle, error) {
	var fd int
	var err error
	for {
		fd, err = unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		return noHandle, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	if !regular {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			_ = unix.Close(fd)
			return noHandle, &fs.PathError{Op: "stat", Path: name, Err: err}
		}
		if st.Mode&unix.S_IFMT != unix.S_IFREG {
			_ = unix.Close(fd)
			return noHandle, errNotAttr
		}
	}
	return handle(fd), nil
}

// readAt0 reads h from offset 0 into buf and returns the length; a
// full buf means the file was too long. The error is the bare errno:
// it allocates nothing, and a counter whose MAD fails answers EINVAL at
// every read.
func readAt0(h handle, _ string, buf []byte) (int, error) {
	for {
		n, err := unix.Pread(int(h), buf, 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return 0, err
		}
		return n, nil
	}
}

func closeHandle(h handle) { _ = unix.Close(int(h)) }

// dirents lists the open directory f from its start with getdents64
// into buf, calling fn with each entry's name (valid only during the
// call) and inode number until fn returns false. Rewinding the
// descriptor that is held open costs one lseek where reopening the
// directory costs an open and a close; the names are not copied, so an
// unchanged listing allocates nothing.
func dirents(f *os.File, buf []byte, fn func(name []byte, ino uint64) bool) error {
	fd := int(f.Fd())
	if _, err := unix.Seek(fd, 0, 0); err != nil {
		return err
	}
	for {
		n, err := unix.Getdents(fd, buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return err
		}
		if n <= 0 {
			return nil
		}
		// struct linux_dirent64: d_ino u64, d_off s64, d_reclen u16,
		// d_type u8, then the name and its NUL.
		for b := buf[:n]; len(b) >= 19; {
			reclen := int(binary.NativeEndian.Uint16(b[16:18]))
			if reclen < 19 || reclen > len(b) {
				return errors.New("malformed directory entry")
			}
			ino := binary.NativeEndian.Uint64(b[0:8])
			name := b[19:reclen]
			for i, c := range name {
				if c == 0 {
					name = name[:i]
					break
				}
			}
			b = b[reclen:]
			if string(name) == "." || string(name) == ".." {
				continue
			}
			if !fn(name, ino) {
				return nil
			}
		}
	}
}

// openDir opens a directory for listing and for the reads above. A plain
// os.Open costs six system calls on Linux (the runtime tries, and fails,
// to add the descriptor to its poller); this costs two, and a device's
// first read opens about six directories.
func openDir(path string) (*os.File, error) {
	return openDirFd(unix.AT_FDCWD, path, path)
}

// openDirAt opens the directory name below the open directory parent.
func openDirAt(parent *os.File, name string) (*os.File, error) {
	return openDirFd(int(parent.Fd()), name, parent.Name()+"/"+name)
}

func openDirFd(dirfd int, name, path string) (*os.File, error) {
	var fd int
	var err error
	for {
		fd, err = unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}
