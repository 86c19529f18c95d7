package kmsg

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// DefaultDevicePath is the kernel's record interface.
const DefaultDevicePath = "/dev/kmsg"

// Start is where OpenDevice begins in the kernel's ring buffer.
type Start int

const (
	// StartOldest reads from the oldest record the ring still holds,
	// where /dev/kmsg is positioned when opened. With Options.Resume
	// this is how an agent catches up after a restart.
	StartOldest Start = iota
	// StartNewest reads only records logged from now on (SEEK_END).
	StartNewest
	// StartAfterClear reads from the first record after the last
	// "dmesg --clear" (SEEK_DATA).
	StartAfterClear
)

// seekData is SEEK_DATA on Linux, the only kernel with /dev/kmsg; the
// syscall package does not name it.
const seekData = 3

// deviceBuf is larger than any record: the kernel formats at most 8 KiB
// (CONSOLE_EXT_LOG_MAX) and fails the read with EINVAL when the buffer
// is smaller than the record, without moving on.
const deviceBuf = 16 << 10

// Device reads /dev/kmsg, where each read(2) returns exactly one record
// with its dictionary lines.
type Device struct {
	src    io.Reader
	closer io.Closer
	name   string
	buf    []byte
	c      core
}

// OpenDevice opens the kernel's record device (path "" means
// DefaultDevicePath) and positions it as opts.Start says. Reading needs
// CAP_SYSLOG where kernel.dmesg_restrict is set.
func OpenDevice(path string, opts Options) (*Device, error) {
	if path == "" {
		path = DefaultDevicePath
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening kernel log: %w", err)
	}
	whence := -1
	switch opts.Start {
	case StartNewest:
		whence = io.SeekEnd
	case StartAfterClear:
		whence = seekData
	}
	if whence >= 0 {
		if _, err := f.Seek(0, whence); err != nil {
			_ = f.Close()
			return nil, fmt.Errorf("positioning kernel log %s: %w", path, err)
		}
	}
	d := NewDevice(f, opts)
	d.closer, d.name = f, path
	return d, nil
}

// NewDevice reads records from src, which must return one record per
// Read as /dev/kmsg does (tests pass a fake).
func NewDevice(src io.Reader, opts Options) *Device {
	d := &Device{src: src, name: "kernel log", buf: make([]byte, deviceBuf)}
	d.c.init(opts.withDefaults())
	return d
}

// maxIdleReads bounds reads in a row that bring no record, so a broken
// source cannot spin Next forever.
const maxIdleReads = 100

// Next returns the next record. It blocks while the kernel has none;
// Close unblocks it. When the ring overwrote records before they were
// read (EPIPE), Next goes on with the oldest record left and counts the
// gap in Stats.Lost.
func (d *Device) Next() (Record, error) {
	idle := 0
	for {
		if rec, ok := d.c.pop(); ok {
			return rec, nil
		}
		n, err := d.src.Read(d.buf)
		if n > 0 {
			idle = 0
			d.c.stats.Lines++
			d.c.raw(firstLine(d.buf[:n]))
			continue
		}
		switch {
		case err == nil:
		case errors.Is(err, syscall.EPIPE):
			d.c.stats.Overruns++
		case errors.Is(err, io.EOF):
			return Record{}, io.EOF
		default:
			return Record{}, fmt.Errorf("reading %s: %w", d.name, err)
		}
		if idle++; idle >= maxIdleReads {
			return Record{}, fmt.Errorf("reading %s: %w", d.name, io.ErrNoProgress)
		}
	}
}

// Stats returns the counts so far; call it from the goroutine that
// calls Next.
func (d *Device) Stats() Stats { return d.c.stats }

// Close closes the device if OpenDevice opened it.
func (d *Device) Close() error {
	if d.closer == nil {
		return nil
	}
	return d.closer.Close()
}
