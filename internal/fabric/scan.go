package fabric

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// devCache is what a Reader keeps of a device between reads: what does
// not change while the device exists (the kernel fixes a device's
// identity, ports, link layers and counter names when it registers it),
// and the files read again each time.
type devCache struct {
	name string
	ino  uint64
	seen uint64 // the reader's gen when a listing last showed it
	// info is the static part of the Device: Name, Driver, Kind,
	// PCIBusID, BoardID, FirmwareVersion, NodeGUID. Its strings are
	// shared by every Snapshot, which is safe: strings do not change.
	info  Device
	ports []portCache
	hw    []file // the device's hw_counters; none: no such directory
}

// dropFiles closes every file c holds.
func (r *reader) dropFiles(c *devCache) {
	if c == nil {
		return
	}
	for i := range c.ports {
		p := &c.ports[i]
		r.release(&p.state.file)
		r.release(&p.physState.file)
		r.release(&p.rate.file)
		r.releaseAll(p.counters)
		r.releaseAll(p.hw)
	}
	r.releaseAll(c.hw)
}

// devRead is one device's reading in progress: its errors, and whether
// a held file said the device is gone.
type devRead struct {
	d     *Device
	spent bool // the budget's end is reported once, not for every file left
	stale bool
}

// fail records the failure of the file rel+name (two parts, so that a
// reading without failures builds no path).
func (x *devRead) fail(rel, name string, err error) {
	if errors.Is(err, errBudget) {
		if x.spent {
			return
		}
		x.spent = true
	}
	if errors.Is(err, errGone) {
		x.stale = true
	}
	x.d.Errors = append(x.d.Errors, problem(rel+name, err))
}

// scan reads class/infiniband/<name> by walking it, which on a real node
// is a symlink into the PCI function's directory, and returns the cache
// for the next reads, which holds the files it kept open (the caller
// drops it when it is not kept; a one-shot Read's is nil). Its failures
// are named by their path below it ("ports/1/rate").
func (r *reader) scan(ctx context.Context, e classEntry) (d Device, c *devCache, err error) {
	d = Device{Name: e.name, Ports: []Port{}}
	if r.cache { // a one-shot Read builds no cache
		c = &devCache{name: e.name, ino: e.ino}
	}
	x := &devRead{d: &d}
	defer func() {
		d.Kind = kindOf(&d) // from the driver and ports read, however far that got
		if c != nil {
			c.info = Device{Name: d.Name, Driver: d.Driver, Kind: d.Kind, PCIBusID: d.PCIBusID,
				BoardID: d.BoardID, FirmwareVersion: d.FirmwareVersion, NodeGUID: d.NodeGUID}
		}
	}()
	dir, err := openDirAt(r.class.f, e.name)
	if err != nil {
		x.fail(e.name, "", err)
		return d, c, nil
	}
	defer func() { _ = dir.Close() }()
	r.identity(&d, dir.Name(), x)
	for _, a := range []struct {
		file string
		to   *string
	}{{"board_id", &d.BoardID}, {"fw_ver", &d.FirmwareVersion}, {"node_guid", &d.NodeGUID}} {
		v, err := r.text(dir, a.file)
		if err != nil && !notExposed(err) {
			x.fail(a.file, "", err)
		}
		*a.to = v
	}
	ports, nums, err := listPorts(dir)
	if err != nil {
		x.fail("ports", "", err)
	}
	if ports != nil {
		defer func() { _ = ports.Close() }()
	}
	for _, num := range nums {
		if err := ctx.Err(); err != nil {
			return d, c, err
		}
		p, pc := r.scanPort(ports, num, x)
		d.Ports = append(d.Ports, p)
		if c != nil {
			c.ports = append(c.ports, pc)
		}
	}
	var hw []file
	d.HWCounters, hw = r.scanCounters(dir, "hw_counters", "hw_counters/", x)
	if c != nil {
		c.hw = hw
	}
	return d, c, nil
}

// identity reads the PCI address and the driver from the device link:
// device -> ../../../0000:3b:00.0 and device/driver -> …/drivers/mlx5_core.
// Only the link targets' names are wanted, so the links are read, not
// followed; a device without a device link (a software device) has
// neither, and that is no error.
func (r *reader) identity(d *Device, dir string, x *devRead) {
	target, err := os.Readlink(filepath.Join(dir, "device"))
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			x.fail("device", "", err)
		}
		return
	}
	d.PCIBusID = pciAddress(filepath.Base(target))
	if _, err := os.Stat(filepath.Join(dir, "device")); err != nil {
		x.fail("device", "", errors.New("link to "+target+" points nowhere"))
		return
	}
	drv, err := os.Readlink(filepath.Join(dir, "device", "driver"))
	switch {
	case err == nil:
		d.Driver = filepath.Base(drv)
	case !errors.Is(err, fs.ErrNotExist): // no driver link: unbound
		x.fail("device/driver", "", err)
	}
}
