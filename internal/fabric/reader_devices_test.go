package fabric

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// The Reader's cache against a tree that changes: devices that come, go
// or are re-created, the bound on held files, the class directory itself.

// A device that appears between reads is in the next one, and one that
// goes away is out of it, with its files closed.
func TestReaderDevicesComeAndGo(t *testing.T) {
	t.Parallel()
	root := fixture(t, "efa-p4d")
	rd := newTestReader(t, root)
	if n := len(readerRead(t, rd).Devices); n != 4 || rd.r.held != efaHeld {
		t.Fatalf("%d devices, %d files held; want 4, %d", n, rd.r.held, efaHeld)
	}
	src := filepath.Join(root, "devices/pci0000:00/0000:10:1b.0/infiniband/rdmap16s27")
	addDevice(t, root, src, "rdmap48s27", "0000:30:1b.0", "efa")
	s := readerRead(t, rd)
	sameAsRead(t, "device added", s, root)
	if len(s.Devices) != 5 || s.Devices[4].Name != "rdmap48s27" || s.Devices[4].PCIBusID != "0000:30:1b.0" ||
		len(s.Devices[4].Ports[0].HWCounters) != 17 || rd.r.held != efaHeld+20 {
		t.Errorf("after adding rdmap48s27: %d devices, %d files held", len(s.Devices), rd.r.held)
	}

	if err := os.Remove(filepath.Join(root, "class/infiniband/rdmap32s27")); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(root, "devices/pci0000:00/0000:20:1b.0")); err != nil {
		t.Fatal(err)
	}
	s = readerRead(t, rd)
	sameAsRead(t, "device removed", s, root)
	for _, d := range s.Devices {
		if d.Name == "rdmap32s27" {
			t.Error("rdmap32s27 still read after it went away")
		}
	}
	if len(s.Devices) != 4 || rd.r.held != efaHeld || rd.r.devs["rdmap32s27"] != nil {
		t.Errorf("after removing rdmap32s27: %d devices, %d files held, want 4, %d", len(s.Devices), rd.r.held, efaHeld)
	}
}

// A device re-created under the same name is walked anew: its class
// entry is a new inode, or, between the listing and the read, its held
// files answer ENODEV (kernfs's answer for a removed node).
func TestReaderDeviceReplaced(t *testing.T) {
	t.Parallel()
	root := fixture(t, "efa-p4d")
	rd := newTestReader(t, root)
	readerRead(t, rd)

	old := rd.r.devs["rdmap16s27"]
	old.ino++ // as if the listing showed a new link
	write(t, root, "devices/pci0000:00/0000:10:1b.0/infiniband/rdmap16s27/ports/1/hw_counters/rx_drops", "9\n")
	s := readerRead(t, rd)
	sameAsRead(t, "new inode", s, root)
	if rd.r.devs["rdmap16s27"] == old || rd.r.held != efaHeld {
		t.Errorf("rdmap16s27 not walked anew, or files leaked: %d held", rd.r.held)
	}

	gone := true
	rd.r.readFile = func(h handle, name string, buf []byte) (int, error) {
		if name == "rx_drops" && gone { // the first device read: rdmap144s27
			gone = false
			return 0, syscall.ENODEV
		}
		return readAt0(h, name, buf)
	}
	old = rd.r.devs["rdmap144s27"]
	s = readerRead(t, rd)
	sameAsRead(t, "ENODEV", s, root)
	if gone || rd.r.devs["rdmap144s27"] == old || rd.r.held != efaHeld {
		t.Errorf("rdmap144s27 not walked anew after ENODEV, or files leaked: %d held", rd.r.held)
	}
}

// Past the bound on held files the rest are opened by path at each
// read, and both kinds see new values.
func TestReaderHeldBound(t *testing.T) {
	t.Parallel()
	root := fixture(t, "efa-p4d")
	rd := newTestReader(t, root)
	rd.r.maxHeld = 10
	readerRead(t, rd)
	if rd.r.held != 10 {
		t.Fatalf("%d files held, want 10", rd.r.held)
	}
	// The first device read, rdmap144s27, holds state, phys_state, rate
	// and its first 7 counters; the last, rdmap32s27, holds none.
	dir := "devices/pci0000:00/0000:%s:1b.0/infiniband/%s/ports/1/"
	write(t, root, fmt.Sprintf(dir, "90", "rdmap144s27")+"hw_counters/rdma_read_bytes", "1\n")
	write(t, root, fmt.Sprintf(dir, "20", "rdmap32s27")+"hw_counters/tx_pkts", "2\n")
	write(t, root, fmt.Sprintf(dir, "20", "rdmap32s27")+"state", "1: DOWN\n")
	s := readerRead(t, rd)
	sameAsRead(t, "past the bound", s, root)
	if got := s.Devices[0].Ports[0].HWCounters["rdma_read_bytes"]; got != 1 {
		t.Errorf("held rdma_read_bytes = %d, want 1", got)
	}
	if p := s.Devices[3].Ports[0]; p.HWCounters["tx_pkts"] != 2 || p.State != "DOWN" {
		t.Errorf("unheld tx_pkts = %d, state %q; want 2, DOWN", p.HWCounters["tx_pkts"], p.State)
	}
	if rd.r.held != 10 {
		t.Errorf("%d files held, want 10", rd.r.held)
	}
}

// The class directory may come and go (ib_core loaded after the agent
// started, or unloaded): an absent or emptied one is looked for again at
// each read.
func TestReaderClassComesAndGoes(t *testing.T) {
	t.Parallel()
	root := fixture(t, "efa-p4d")
	class := filepath.Join(root, "class/infiniband")
	if err := os.Rename(class, class+".off"); err != nil {
		t.Fatal(err)
	}
	rd := newTestReader(t, root)
	if s := readerRead(t, rd); len(s.Devices) != 0 || s.Errors != nil {
		t.Fatalf("no class directory: %d devices, errors %q", len(s.Devices), s.Errors)
	}
	if err := os.Rename(class+".off", class); err != nil {
		t.Fatal(err)
	}
	if s := readerRead(t, rd); len(s.Devices) != 4 {
		t.Fatalf("class directory back: %d devices, want 4", len(s.Devices))
	}
	// Emptied, removed, and made again with two of the devices.
	links := map[string]string{}
	for _, n := range []string{"rdmap16s27", "rdmap32s27", "rdmap144s27", "rdmap160s27"} {
		target, err := os.Readlink(filepath.Join(class, n))
		if err != nil {
			t.Fatal(err)
		}
		links[n] = target
		if err := os.Remove(filepath.Join(class, n)); err != nil {
			t.Fatal(err)
		}
	}
	if s := readerRead(t, rd); len(s.Devices) != 0 || rd.r.held != 0 || rd.r.class.f != nil {
		t.Fatalf("emptied: %d devices, %d files held, class held %v", len(s.Devices), rd.r.held, rd.r.class.f != nil)
	}
	if err := os.Remove(class); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(class, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"rdmap16s27", "rdmap160s27"} {
		if err := os.Symlink(links[n], filepath.Join(class, n)); err != nil {
			t.Fatal(err)
		}
	}
	s := readerRead(t, rd)
	sameAsRead(t, "class directory made again", s, root)
	if len(s.Devices) != 2 || rd.r.held != 2*20 {
		t.Errorf("made again: %d devices, %d files held; want 2, 40", len(s.Devices), rd.r.held)
	}
}
