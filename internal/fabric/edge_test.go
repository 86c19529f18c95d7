package fabric

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The tests below break a copy of the RoCE capture (one device, one port)
// the ways sysfs breaks, and check that what is still readable is read.

const bond = "class/infiniband/mlx5_bond_0"

func readRoot(t *testing.T, root string) *Snapshot {
	t.Helper()
	s, err := Read(context.Background(), ReadOptions{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A port without counters/ (EFA never has one) has nil Counters and no
// error; its hw_counters are still read.
func TestPortWithoutCounters(t *testing.T) {
	t.Parallel()
	root := fixture(t, "connectx-roce")
	if err := os.RemoveAll(filepath.Join(root, bond, "ports/1/counters")); err != nil {
		t.Fatal(err)
	}
	d := readRoot(t, root).Devices[0]
	p := d.Ports[0]
	if p.Counters != nil || len(p.HWCounters) != 25 || d.Errors != nil {
		t.Errorf("counters %v, %d hw_counters, errors %q; want nil, 25, none", p.Counters, len(p.HWCounters), d.Errors)
	}
}

// "N/A (no PMA)" is what a device without performance management writes
// in every counters/ file (node_exporter's i40iw0 fixture); such a counter
// is absent, not 0, and no error.
func TestCounterNotAvailable(t *testing.T) {
	t.Parallel()
	root := fixture(t, "connectx-roce")
	write(t, root, bond+"/ports/1/counters/symbol_error", "N/A (no PMA)\n")
	write(t, root, bond+"/ports/1/counters/link_downed", "N/A (no PMA)\n")
	d := readRoot(t, root).Devices[0]
	c := d.Ports[0].Counters
	_, sym := c["symbol_error"]
	_, down := c["link_downed"]
	if sym || down || len(c) != 19 || d.Errors != nil {
		t.Errorf("symbol_error present %v, link_downed present %v, %d counters, errors %q; want false, false, 19, none",
			sym, down, len(c), d.Errors)
	}
}

// The kernel answers EINVAL for a counter whose MAD failed and EIO or
// ETIMEDOUT when the firmware does not answer: both leave the counter out,
// and only the second is an error worth reporting.
func TestCounterUnreadable(t *testing.T) {
	t.Parallel()
	root := fixture(t, "connectx-roce")
	r := newReader()
	r.readFile = func(h handle, name string, buf []byte) (int, error) {
		switch name {
		case "port_rcv_errors":
			return 0, &os.PathError{Op: "read", Path: name, Err: syscall.EINVAL}
		case "rx_write_requests":
			return 0, &os.PathError{Op: "read", Path: name, Err: syscall.ETIMEDOUT}
		}
		return readAt0(h, name, buf)
	}
	s, err := r.read(context.Background(), ReadOptions{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	d := s.Devices[0]
	_, rcv := d.Ports[0].Counters["port_rcv_errors"]
	_, wr := d.Ports[0].HWCounters["rx_write_requests"]
	if rcv || wr {
		t.Errorf("port_rcv_errors present %v, rx_write_requests present %v; want both absent", rcv, wr)
	}
	want := []string{"ports/1/hw_counters/rx_write_requests: " + syscall.ETIMEDOUT.Error()}
	if diff := cmp.Diff(want, d.Errors); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}

// A device link that points nowhere still names the PCI address; the
// driver cannot be read through it, which is the device's error, and the
// ports are read all the same.
func TestDeviceLinkPointsNowhere(t *testing.T) {
	t.Parallel()
	root := fixture(t, "connectx-roce")
	if err := os.RemoveAll(filepath.Join(root, "devices/pci0000:00/0000:9f:00.0/driver")); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(root, "devices/pci0000:00/0000:9f:00.0/infiniband/mlx5_bond_0/device")
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../../0000:A0:00.1", link); err != nil { // gone, and upper-case
		t.Fatal(err)
	}
	d := readRoot(t, root).Devices[0]
	got := Device{Name: d.Name, Driver: d.Driver, Kind: d.Kind, PCIBusID: d.PCIBusID, Errors: d.Errors}
	want := Device{Name: "mlx5_bond_0", Kind: KindRoCE, PCIBusID: "0000:a0:00.1",
		Errors: []string{"device: link to ../../../0000:A0:00.1 points nowhere"}}
	if diff := cmp.Diff(want, got); diff != "" || len(d.Ports) != 1 || len(d.Ports[0].Counters) != 21 {
		t.Errorf("(-want +got):\n%s\nports %d", diff, len(d.Ports))
	}
}

// A class entry that is a dangling link (the device went away between the
// listing and the read) is listed with its error; the other devices are
// read.
func TestDeviceVanished(t *testing.T) {
	t.Parallel()
	root := fixture(t, "efa-p4d")
	if err := os.RemoveAll(filepath.Join(root, "devices/pci0000:00/0000:20:1b.0")); err != nil {
		t.Fatal(err)
	}
	s := readRoot(t, root)
	var names []string
	for _, d := range s.Devices {
		names = append(names, d.Name)
		if d.Name == "rdmap32s27" {
			if len(d.Errors) != 1 || !strings.HasPrefix(d.Errors[0], "rdmap32s27: ") || len(d.Ports) != 0 {
				t.Errorf("vanished device: errors %q, %d ports", d.Errors, len(d.Ports))
			}
		} else if len(d.Ports) != 1 || d.Errors != nil {
			t.Errorf("%s: %d ports, errors %q", d.Name, len(d.Ports), d.Errors)
		}
	}
	if diff := cmp.Diff([]string{"rdmap144s27", "rdmap160s27", "rdmap16s27", "rdmap32s27"}, names); diff != "" {
		t.Errorf("devices (-want +got):\n%s", diff)
	}
}

// Bad port states, rates and port names are the device's errors; the
// port's other readings survive them.
func TestBadPortFiles(t *testing.T) {
	t.Parallel()
	root := fixture(t, "connectx-roce")
	write(t, root, bond+"/ports/1/state", "ACTIVE\n")
	write(t, root, bond+"/ports/1/rate", "fast\n")
	write(t, root, bond+"/ports/1/counters/symbol_error", "-1\n")
	write(t, root, bond+"/ports/junk/state", "4: ACTIVE\n")
	d := readRoot(t, root).Devices[0]
	want := []string{
		"ports: not a port number: \"junk\"",
		"ports/1/state: not a state (\"4: ACTIVE\"): \"ACTIVE\"",
		"ports/1/rate: not a rate (\"400 Gb/sec (4X NDR)\"): \"fast\"",
		"ports/1/counters/symbol_error: not a counter (64-bit decimal): \"-1\"",
	}
	if diff := cmp.Diff(want, d.Errors); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
	p := d.Ports[0]
	if len(d.Ports) != 1 || p.State != "" || p.RateGbps != nil || p.PhysState != "LinkUp" || len(p.Counters) != 20 {
		t.Errorf("port %+v", p)
	}
}

// A software device's link points at no PCI function: no address, no
// error.
func TestPCIAddress(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"0000:3b:00.0": "0000:3b:00.0", "0000:3B:00.7": "0000:3b:00.7", "10000:00:01.0": "10000:00:01.0",
		"eth0": "", "0000:3b:00.8": "", "0000:3b:0.0": "", "0000:3g:00.0": "", "": "",
	} {
		if got := pciAddress(in); got != want {
			t.Errorf("pciAddress(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestNotExposed(t *testing.T) {
	t.Parallel()
	for err, want := range map[error]bool{
		os.ErrNotExist: true, syscall.EINVAL: true, syscall.EOPNOTSUPP: true, syscall.ENODATA: true,
		syscall.EIO: false, syscall.EACCES: false, errTooLong: false, errors.New("x"): false,
	} {
		if got := notExposed(&os.PathError{Op: "read", Path: "x", Err: err}); got != want {
			t.Errorf("notExposed(%v) = %v, want %v", err, got, want)
		}
	}
}
