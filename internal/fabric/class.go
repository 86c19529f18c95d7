package fabric

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// classEntry is a name in class/infiniband and the inode number of its
// link: kernfs gives a re-created node a new number, so a device that
// went away and came back under the same name (a driver reload) is seen
// as a new one, whose cached files are not the live ones.
type classEntry struct {
	name string
	ino  uint64
}

// classDir is class/infiniband, held open by a Reader between reads, and
// its last listing. The listing is the one check every read makes for
// devices that appeared or went away: an lseek and two getdents64, which
// allocate nothing while the listing is unchanged. Its mtime would be
// cheaper but kernfs does not keep a directory's mtime reliably.
type classDir struct {
	f      *os.File
	listed []classEntry // in directory order, at most maxDevices+1
	sorted []classEntry // by name, at most maxDevices
	buf    []byte
}

// errNoClass says that there is no class/infiniband: no RDMA on the node.
var errNoClass = errors.New("no class/infiniband")

// list lists class/infiniband below root, opening it if it is not held.
// It returns the devices sorted by name (the slice is the classDir's,
// valid until the next list) and an error for the Snapshot (past
// maxDevices, some entries are still returned); errNoClass when there is
// no such directory.
func (c *classDir) list(root string) ([]classEntry, error) {
	if c.f == nil {
		f, err := openDir(filepath.Join(root, "class", "infiniband"))
		if errors.Is(err, fs.ErrNotExist) {
			return nil, errNoClass
		}
		if err != nil {
			return nil, err
		}
		c.f = f
		c.listed, c.sorted = c.listed[:0], c.sorted[:0]
	}
	if c.buf == nil {
		// Room for about a hundred entries per getdents64; more take
		// more calls.
		c.buf = make([]byte, 4096)
	}
	// Entries are compared with the last listing as they come; the first
	// difference copies what matched and collects the rest anew.
	n, changed := 0, false
	var fresh []classEntry
	err := dirents(c.f, c.buf, func(name []byte, ino uint64) bool {
		if !changed && n < len(c.listed) && c.listed[n].ino == ino && c.listed[n].name == string(name) {
			n++
			return n <= maxDevices
		}
		if !changed {
			changed = true
			fresh = append(make([]classEntry, 0, n+8), c.listed[:n]...)
		}
		fresh = append(fresh, classEntry{name: string(name), ino: ino})
		n++
		return n <= maxDevices
	})
	if !changed && n != len(c.listed) {
		changed, fresh = true, c.listed[:n]
	}
	if err != nil || n == 0 {
		// An empty or unreadable directory is opened afresh next time:
		// class/infiniband goes away with ib_core and comes back as a new
		// directory that the old descriptor would never show.
		c.close()
		if err != nil {
			return nil, err
		}
		return nil, nil
	}
	if changed {
		c.listed = fresh
		c.sorted = append(c.sorted[:0], fresh...)
		slices.SortFunc(c.sorted, func(a, b classEntry) int { return strings.Compare(a.name, b.name) })
	}
	if len(c.listed) > maxDevices {
		return c.sorted[:maxDevices], errors.New("more than " + strconv.Itoa(maxDevices) + " entries; read " + strconv.Itoa(maxDevices))
	}
	return c.sorted, nil
}

func (c *classDir) close() {
	if c.f != nil {
		_ = c.f.Close()
		c.f = nil
	}
	c.listed, c.sorted = c.listed[:0], c.sorted[:0]
}
