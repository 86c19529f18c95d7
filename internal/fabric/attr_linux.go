package fabric

import (
	"errors"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// readAttrFile reads the attribute name of dir into buf and returns its
// length; len(buf) bytes mean the file was too long. regular says that a
// listing of dir showed name is a regular file, so it is not checked
// again. The file is opened relative to its directory, so that the kernel
// walks one path component instead of the dozen (and the class/infiniband
// symlink) of a full path: a node's read is about a thousand files.
//
// O_NONBLOCK and the check that the opened file is a regular one keep a
// FIFO planted in the tree from blocking the agent and a device file
// (/dev/zero) from feeding it. One read is enough: sysfs hands over the
// whole attribute at once.
func readAttrFile(dir *os.File, name string, buf []byte, regular bool) (int, error) {
	var fd int
	var err error
	for {
		fd, err = unix.Openat(int(dir.Fd()), name, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		return 0, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	defer func() { _ = unix.Close(fd) }()
	if !regular {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return 0, &fs.PathError{Op: "stat", Path: name, Err: err}
		}
		if st.Mode&unix.S_IFMT != unix.S_IFREG {
			return 0, errNotAttr
		}
	}
	for {
		n, err := unix.Read(fd, buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return 0, &fs.PathError{Op: "read", Path: name, Err: err}
		}
		return n, nil
	}
}

// openDir opens a directory for listing and for the reads above. A plain
// os.Open costs six system calls on Linux (the runtime tries, and fails,
// to add the descriptor to its poller); this costs two, and a node's read
// opens about six directories a device.
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
