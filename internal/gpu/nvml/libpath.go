package nvml

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// LibraryName is the NVML library's soname, as the driver installs it.
const LibraryName = "libnvidia-ml.so.1"

// maxLinks bounds the symbolic links followed from one candidate.
const maxLinks = 16

// FindLibrary returns the path of libnvidia-ml.so.1 under root, the
// directory a driver's files are installed (or mounted) in. For "" and
// "/" it returns "": the system's dynamic loader then searches as it does
// for any library, which is what a driver installed on the host needs.
func FindLibrary(root string) (string, error) {
	return findLibrary(root, runtime.GOARCH)
}

// libraryDirs are where distributions put a driver's libraries, the
// multiarch directory first: it is Debian's and Ubuntu's real one, and
// the GPU Operator's driver images are built on those. "." last: the root
// may be a library directory itself (the EKS accelerated AMI's /usr/lib64
// mounted alone), where the library's links are relative.
func libraryDirs(goarch string) []string {
	var dirs []string
	switch goarch {
	case "amd64":
		dirs = append(dirs, "usr/lib/x86_64-linux-gnu")
	case "arm64":
		dirs = append(dirs, "usr/lib/aarch64-linux-gnu")
	}
	return append(dirs, "usr/lib64", "usr/lib", "lib64", "lib", ".")
}

func findLibrary(root, goarch string) (string, error) {
	if root == "" || filepath.Clean(root) == "/" {
		return "", nil
	}
	root = filepath.Clean(root)
	if _, err := os.Stat(root); err != nil {
		return "", fmt.Errorf("driver root %s: %w", root, err)
	}
	dirs := libraryDirs(goarch)
	for _, dir := range dirs {
		p := filepath.Join(root, dir, LibraryName)
		if _, err := os.Lstat(p); err != nil {
			continue
		}
		return resolveInRoot(root, p)
	}
	searched := strings.Join(dirs[:len(dirs)-1], ", ") + " and the root itself"
	return "", fmt.Errorf("no %s under driver root %s (searched %s)", LibraryName, root, searched)
}

// resolveInRoot follows the links of the library file itself inside
// root: the driver's libnvidia-ml.so.1 is a link to the versioned file,
// and a link with an absolute target means a path in the driver's tree,
// not in ours. dlopen would follow it against our /.
func resolveInRoot(root, p string) (string, error) {
	orig := p
	for range maxLinks {
		fi, err := os.Lstat(p)
		if err != nil {
			return "", fmt.Errorf("driver root %s: %s: %w", root, orig, err)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			if !fi.Mode().IsRegular() {
				return "", fmt.Errorf("driver root %s: %s is not a file", root, p)
			}
			return p, nil
		}
		target, err := os.Readlink(p)
		if err != nil {
			return "", fmt.Errorf("driver root %s: %w", root, err)
		}
		if filepath.IsAbs(target) {
			p = filepath.Join(root, target)
		} else {
			p = filepath.Join(filepath.Dir(p), target)
		}
		if rel, err := filepath.Rel(root, p); err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			return "", fmt.Errorf("driver root %s: %s links outside the root, to %s", root, orig, p)
		}
	}
	return "", fmt.Errorf("driver root %s: %s: more than %d links", root, orig, maxLinks)
}
