package fabric

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
)

// ReadOptions configures Read.
type ReadOptions struct {
	// Root is where sysfs is mounted: "/sys" when empty, the host's sysfs
	// bind-mounted into the agent's container otherwise (node_exporter's
	// --path.sysfs).
	Root string
	// ExpectedDevices is copied into the Snapshot: the agent's flag or
	// ExpectedDevices(instance type); 0 means unknown.
	ExpectedDevices int
}

// Bounds on one Read, so that a broken or hostile sysfs (a directory of a
// million entries, a counter file of a gigabyte) costs a bounded amount
// of time and memory. Real nodes are far below them: a p5.48xlarge has 32
// devices of one port and about 25 counters each, a ConnectX port about 50.
const (
	maxDevices  = 512
	maxPorts    = 64
	maxCounters = 256     // per counters/ or hw_counters/ directory
	maxFiles    = 1 << 16 // attribute reads per Read, all devices together
)

// Read reads every RDMA device under <Root>/class/infiniband. A node
// without RDMA (no such directory) has zero devices and no error. What
// cannot be read is recorded in the Snapshot's or the device's Errors and
// the rest is still read; the returned error is only ctx's, checked
// between files (a sysfs read cannot be interrupted).
func Read(ctx context.Context, opts ReadOptions) (*Snapshot, error) {
	return newReader().read(ctx, opts)
}

// reader holds one Read's buffer and file budget; it is not safe for
// concurrent use.
type reader struct {
	buf   []byte
	files int
	// readFile reads one attribute of dir into buf: readAttrFile, or in
	// tests a wrapper that fails the way the kernel does (EINVAL).
	readFile func(dir *os.File, name string, buf []byte, regular bool) (int, error)
}

func newReader() *reader {
	return &reader{buf: make([]byte, maxAttrBytes+1), readFile: readAttrFile}
}

func (r *reader) read(ctx context.Context, opts ReadOptions) (*Snapshot, error) {
	root := opts.Root
	if root == "" {
		root = "/sys"
	}
	s := &Snapshot{ExpectedDevices: opts.ExpectedDevices, Devices: []Device{}}
	class, err := openDir(filepath.Join(root, "class", "infiniband"))
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil // no RDMA on this node
	}
	if err != nil {
		s.Errors = append(s.Errors, problem("class/infiniband", err))
		return s, nil
	}
	defer func() { _ = class.Close() }()
	entries, err := list(class, maxDevices)
	if err != nil {
		s.Errors = append(s.Errors, problem("class/infiniband", err))
	}
	for i, e := range entries {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if r.files >= maxFiles {
			s.Errors = append(s.Errors, errBudget.Error()+": "+strconv.Itoa(len(entries)-i)+" devices not read")
			break
		}
		d, err := r.device(ctx, class, e.Name())
		if err != nil {
			return nil, err
		}
		s.Devices = append(s.Devices, d)
	}
	return s, nil
}

// device reads class/infiniband/<name>, which on a real node is a symlink
// into the PCI function's directory. Its failures are named by their path
// below it ("ports/1/rate").
func (r *reader) device(ctx context.Context, class *os.File, name string) (d Device, err error) {
	d = Device{Name: name, Ports: []Port{}}
	spent := false // the budget's end is reported once, not for every file left
	fail := func(rel string, err error) {
		if errors.Is(err, errBudget) {
			if spent {
				return
			}
			spent = true
		}
		d.Errors = append(d.Errors, problem(rel, err))
	}
	defer func() { d.Kind = kindOf(&d) }() // from the driver and ports read, however far that got
	dir, err := openDirAt(class, name)
	if err != nil {
		fail(name, err)
		return d, nil
	}
	defer func() { _ = dir.Close() }()
	r.identity(&d, dir.Name(), fail)
	for _, a := range []struct {
		file string
		to   *string
	}{{"board_id", &d.BoardID}, {"fw_ver", &d.FirmwareVersion}, {"node_guid", &d.NodeGUID}} {
		v, err := r.text(dir, a.file)
		if err != nil && !notExposed(err) {
			fail(a.file, err)
		}
		*a.to = v
	}
	ports, nums, err := listPorts(dir)
	if err != nil {
		fail("ports", err)
	}
	if ports != nil {
		defer func() { _ = ports.Close() }()
	}
	for _, num := range nums {
		if err := ctx.Err(); err != nil {
			return d, err
		}
		d.Ports = append(d.Ports, r.port(ports, num, fail))
	}
	d.HWCounters = r.counters(dir, "hw_counters", "hw_counters", fail)
	return d, nil
}

// identity reads the PCI address and the driver from the device link:
// device -> ../../../0000:3b:00.0 and device/driver -> …/drivers/mlx5_core.
// Only the link targets' names are wanted, so the links are read, not
// followed; a device without a device link (a software device) has
// neither, and that is no error.
func (r *reader) identity(d *Device, dir string, fail func(string, error)) {
	target, err := os.Readlink(filepath.Join(dir, "device"))
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			fail("device", err)
		}
		return
	}
	d.PCIBusID = pciAddress(filepath.Base(target))
	if _, err := os.Stat(filepath.Join(dir, "device")); err != nil {
		fail("device", errors.New("link to "+target+" points nowhere"))
		return
	}
	drv, err := os.Readlink(filepath.Join(dir, "device", "driver"))
	switch {
	case err == nil:
		d.Driver = filepath.Base(drv)
	case !errors.Is(err, fs.ErrNotExist): // no driver link: unbound
		fail("device/driver", err)
	}
}
