package fabric

import (
	"context"
	"errors"
	"strconv"
)

// ReadOptions configures Read and NewReader.
type ReadOptions struct {
	// Root is where sysfs is mounted: "/sys" when empty, the host's sysfs
	// bind-mounted into the agent's container otherwise (node_exporter's
	// --path.sysfs).
	Root string
	// ExpectedDevices is copied into the Snapshot: the agent's flag or
	// ExpectedDevices(instance type); 0 means unknown.
	ExpectedDevices int
}

// Bounds on one read, so that a broken or hostile sysfs (a directory of a
// million entries, a counter file of a gigabyte) costs a bounded amount
// of time and memory. Real nodes are far below them: a p5.48xlarge has 32
// devices of one port and about 25 counters each, a ConnectX port about 50.
const (
	maxDevices  = 512
	maxPorts    = 64
	maxCounters = 256     // per counters/ or hw_counters/ directory
	maxFiles    = 1 << 16 // attribute reads per read, all devices together
)

// Read reads every RDMA device under <Root>/class/infiniband once. A node
// without RDMA (no such directory) has zero devices and no error. What
// cannot be read is recorded in the Snapshot's or the device's Errors and
// the rest is still read; the returned error is only ctx's, checked
// between devices and ports (a sysfs read cannot be interrupted). An agent
// that reads the fabric at every collection uses a Reader instead.
func Read(ctx context.Context, opts ReadOptions) (*Snapshot, error) {
	r := newReader()
	defer r.close()
	return r.read(ctx, opts)
}

// reader is what Read and a Reader share: the buffer, the file budget,
// and for a Reader the class directory, the devices read so far and the
// files held open. It is not safe for concurrent use.
type reader struct {
	buf   []byte
	files int // attribute reads in this read; the budget is maxFiles
	// readFile reads a held or just opened attribute into buf from
	// offset 0: readAt0, or in tests a wrapper that fails the way the
	// kernel does (EINVAL, ENODEV).
	readFile func(h handle, name string, buf []byte) (int, error)

	// cache: keep the devices between reads (a Reader); a one-shot Read
	// keeps nothing and holds no file past the read.
	cache   bool
	maxHeld int // the bound on held attribute files
	held    int // attribute files held open now
	class   classDir
	devs    map[string]*devCache
	gen     uint64 // counts reads, to find the devices a listing lost
}

func newReader() *reader {
	return &reader{buf: make([]byte, maxAttrBytes+1), readFile: readAt0}
}

func (r *reader) read(ctx context.Context, opts ReadOptions) (*Snapshot, error) {
	// The budget is per read; it is reset at the end so that a test can
	// start a read with part of it spent.
	defer func() { r.files = 0 }()
	root := opts.Root
	if root == "" {
		root = "/sys"
	}
	s := &Snapshot{ExpectedDevices: opts.ExpectedDevices, Devices: []Device{}}
	entries, err := r.class.list(root)
	if errors.Is(err, errNoClass) {
		r.forget(nil)
		return s, nil // no RDMA on this node
	}
	if err != nil {
		s.Errors = append(s.Errors, problem("class/infiniband", err))
	}
	r.forget(entries)
	if len(entries) > 0 {
		s.Devices = make([]Device, 0, len(entries))
	}
	for i, e := range entries {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if r.files >= maxFiles {
			s.Errors = append(s.Errors, errBudget.Error()+": "+strconv.Itoa(len(entries)-i)+" devices not read")
			break
		}
		d, err := r.device(ctx, e)
		if err != nil {
			return nil, err
		}
		s.Devices = append(s.Devices, d)
	}
	if !r.cache {
		r.class.close()
	}
	return s, nil
}

// device reads one device: from its cache if the class entry is the one
// cached, else by walking its directory. A device whose reading had an
// error is not kept, so the next read walks it again: its errors may be
// transient, and the walk is what a one-shot Read would do.
func (r *reader) device(ctx context.Context, e classEntry) (Device, error) {
	if c := r.devs[e.name]; c != nil {
		d, stale, err := r.refresh(ctx, c)
		if err != nil || (!stale && d.Errors == nil) {
			return d, err // canceled, the cache still good; or read
		}
		r.drop(c)
		if !stale {
			return d, nil
		}
		// ENODEV: the files held are a removed device's, replaced under
		// the same name between the listing and the read. Walk it anew.
	}
	d, c, err := r.scan(ctx, e)
	if err != nil || !r.cache || d.Errors != nil {
		r.dropFiles(c)
		return d, err
	}
	if r.devs == nil {
		r.devs = make(map[string]*devCache)
	}
	c.seen = r.gen
	r.devs[e.name] = c
	return d, nil
}

// forget closes the cached devices that the new listing, entries, lacks, or
// whose entry is a different inode (the device was re-created).
func (r *reader) forget(entries []classEntry) {
	if len(r.devs) == 0 {
		return
	}
	r.gen++
	for _, e := range entries {
		if c := r.devs[e.name]; c != nil && c.ino == e.ino {
			c.seen = r.gen
		}
	}
	for _, c := range r.devs {
		if c.seen != r.gen {
			r.drop(c)
		}
	}
}

// drop forgets a cached device and closes its files.
func (r *reader) drop(c *devCache) {
	delete(r.devs, c.name)
	r.dropFiles(c)
}

// close closes every file the reader holds.
func (r *reader) close() {
	for _, c := range r.devs {
		r.drop(c)
	}
	r.class.close()
}
