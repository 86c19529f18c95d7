package fabric

import (
	"context"
	"errors"
	"sync"
)

// maxHeld bounds the attribute files a Reader holds open. Each costs the
// process a descriptor and the kernel a struct file and, once read, the
// page-sized seq_file buffer that sysfs keeps until the file is closed
// (about 5 KiB, charged to the agent's memory cgroup). A p5.48xlarge's 32
// EFA devices hold 640 files and an 8-HCA ConnectX-7 node 392; past the
// bound files are opened, read and closed at each read, as in Read.
const maxHeld = 1024

// ErrClosed is what Read returns after Close.
var ErrClosed = errors.New("fabric: Reader closed")

// Reader reads the node's RDMA devices again and again for much less than
// Read costs each time. It keeps what does not change while a device
// exists (its driver, PCI address, board_id, fw_ver, node_guid, ports,
// link layers and counter file names) and holds the files that do change
// (state, phys_state, rate, counters) open, re-reading each with one
// system call where Read opens, reads and closes it. Every read lists
// class/infiniband, so a device that appeared or went away is seen at
// the next read; a device whose read had an error is walked afresh at the
// next one. A Reader is safe for concurrent use; reads are serialized.
//
// Each Snapshot is new: its slices and maps are never written by a later
// read, which the analyzer needs (it keeps a snapshot's counters for the
// next deltas). Unchanged strings and rate pointers are shared between
// Snapshots, and must not be written through.
type Reader struct {
	mu     sync.Mutex
	opts   ReadOptions
	r      *reader
	closed bool
}

// NewReader returns a Reader of opts.Root; it opens nothing until the
// first Read. Close releases its files.
func NewReader(opts ReadOptions) *Reader {
	r := newReader()
	r.cache, r.maxHeld = true, maxHeld
	return &Reader{opts: opts, r: r}
}

// Read reads every RDMA device, as the package's Read does and with the
// same result; the returned error is ctx's or ErrClosed.
func (rd *Reader) Read(ctx context.Context) (*Snapshot, error) {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	if rd.closed {
		return nil, ErrClosed
	}
	return rd.r.read(ctx, rd.opts)
}

// Close closes every file the Reader holds; later Reads fail. It never
// fails: sysfs files have nothing to flush.
func (rd *Reader) Close() error {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	rd.closed = true
	rd.r.close()
	return nil
}
