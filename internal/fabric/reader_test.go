package fabric

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Files a Reader holds for the fixtures: state, phys_state, rate and the
// counters of each port (lifespan is no counter).
const (
	efaHeld  = 4 * (3 + 17)
	roceHeld = 3 + 21 + 25
)

func newTestReader(t *testing.T, root string) *Reader {
	t.Helper()
	rd := NewReader(ReadOptions{Root: root})
	t.Cleanup(func() { _ = rd.Close() })
	return rd
}

func readerRead(t *testing.T, rd *Reader) *Snapshot {
	t.Helper()
	s, err := rd.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// sameAsRead checks that a Reader's reading of root is what a one-shot
// Read of root reads now.
func sameAsRead(t *testing.T, what string, got *Snapshot, root string) {
	t.Helper()
	if diff := cmp.Diff(readRoot(t, root), got); diff != "" {
		t.Errorf("%s: Reader differs from Read (-Read +Reader):\n%s", what, diff)
	}
}

// A Reader reads what Read reads, at its first read and at the later
// ones, from the captures and from broken trees.
func TestReaderMatchesRead(t *testing.T) {
	t.Parallel()
	broken := func(t *testing.T) string { // as in TestBadPortFiles
		root := fixture(t, "connectx-roce")
		write(t, root, bond+"/ports/1/state", "ACTIVE\n")
		write(t, root, bond+"/ports/1/rate", "fast\n")
		write(t, root, bond+"/ports/1/counters/symbol_error", "-1\n")
		write(t, root, bond+"/ports/1/counters/link_downed", "N/A (no PMA)\n")
		write(t, root, bond+"/ports/junk/state", "4: ACTIVE\n")
		return root
	}
	vanished := func(t *testing.T) string { // as in TestDeviceVanished
		root := fixture(t, "efa-p4d")
		if err := os.RemoveAll(filepath.Join(root, "devices/pci0000:00/0000:20:1b.0")); err != nil {
			t.Fatal(err)
		}
		return root
	}
	for name, tree := range map[string]func(*testing.T) string{
		"connectx-ib":   func(t *testing.T) string { return fixture(t, "connectx-ib") },
		"connectx-roce": func(t *testing.T) string { return fixture(t, "connectx-roce") },
		"efa-p4d":       func(t *testing.T) string { return fixture(t, "efa-p4d") },
		"no-rdma":       func(t *testing.T) string { return t.TempDir() },
		"broken":        broken,
		"vanished":      vanished,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			root := tree(t)
			rd := newTestReader(t, root)
			for i := range 3 {
				sameAsRead(t, "read "+string(rune('1'+i)), readerRead(t, rd), root)
			}
		})
	}
}

// New values written into the files between reads are read: counters,
// states and rate. The earlier Snapshot is not changed by the later
// reads, and no two Snapshots share a counter map: the analyzer keeps the
// previous one's for deltas.
func TestReaderSeesChanges(t *testing.T) {
	t.Parallel()
	root := fixture(t, "connectx-roce")
	rd := newTestReader(t, root)
	first := readerRead(t, rd)
	p1 := first.Devices[0].Ports[0]
	if p1.State != "ACTIVE" || *p1.RateGbps != 200 || p1.Counters["symbol_error"] != 0 {
		t.Fatalf("first read: %+v", p1)
	}
	write(t, root, bond+"/ports/1/state", "1: DOWN\n")
	write(t, root, bond+"/ports/1/phys_state", "3: Disabled\n")
	write(t, root, bond+"/ports/1/rate", "100 Gb/sec (2X HDR)\n")
	write(t, root, bond+"/ports/1/counters/symbol_error", "7\n")
	write(t, root, bond+"/ports/1/counters/link_downed", "N/A (no PMA)\n")
	write(t, root, bond+"/ports/1/hw_counters/roce_adp_retrans", "18446744073709551615\n")
	second := readerRead(t, rd)
	sameAsRead(t, "after the writes", second, root)
	p2 := second.Devices[0].Ports[0]
	_, down := p2.Counters["link_downed"]
	if p2.State != "DOWN" || p2.PhysState != "Disabled" || *p2.RateGbps != 100 || p2.Counters["symbol_error"] != 7 ||
		down || p2.HWCounters["roce_adp_retrans"] != 1<<64-1 {
		t.Errorf("second read: %+v", p2)
	}
	if p1.State != "ACTIVE" || p1.PhysState != "LinkUp" || *p1.RateGbps != 200 || p1.Counters["symbol_error"] != 0 ||
		p1.Counters["link_downed"] != 0 || p1.HWCounters["roce_adp_retrans"] != 3 {
		t.Errorf("the first Snapshot changed: %+v", p1)
	}

	// A counter that said N/A is read again when it has a value.
	write(t, root, bond+"/ports/1/counters/link_downed", "2\n")
	third := readerRead(t, rd)
	sameAsRead(t, "third read", third, root)
	p3 := third.Devices[0].Ports[0]
	if p3.Counters["link_downed"] != 2 {
		t.Errorf("link_downed back from N/A: %d", p3.Counters["link_downed"])
	}
	for _, m := range []map[string]uint64{p1.Counters, p1.HWCounters, p2.Counters, p2.HWCounters} {
		for _, n := range []map[string]uint64{p3.Counters, p3.HWCounters} {
			if reflect.ValueOf(m).UnsafePointer() == reflect.ValueOf(n).UnsafePointer() {
				t.Fatal("two Snapshots share a counter map")
			}
		}
	}
	if rd.r.held != roceHeld {
		t.Errorf("%d files held, want %d", rd.r.held, roceHeld)
	}
}

// A device whose read had an error is not kept: its files are closed and
// the next read walks it again, as Read would (TestReaderMatchesRead
// checks the readings). A counter the kernel refuses (EINVAL) is no error
// and is tried again at every read.
func TestReaderErrorsNotKept(t *testing.T) {
	t.Parallel()
	root := fixture(t, "connectx-roce")
	write(t, root, bond+"/ports/1/rate", "fast\n")
	rd := newTestReader(t, root)
	for range 2 {
		if s := readerRead(t, rd); len(s.Devices[0].Errors) != 1 || rd.r.held != 0 || len(rd.r.devs) != 0 {
			t.Errorf("errors %q, %d files held, %d devices kept; want 1 error, none kept",
				s.Devices[0].Errors, rd.r.held, len(rd.r.devs))
		}
	}

	write(t, root, bond+"/ports/1/rate", "200 Gb/sec (2X NDR)\n")
	refused := 0
	rd.r.readFile = func(h handle, name string, buf []byte) (int, error) {
		if name == "port_rcv_errors" {
			refused++
			return 0, syscall.EINVAL
		}
		return readAt0(h, name, buf)
	}
	for range 3 {
		s := readerRead(t, rd)
		if _, ok := s.Devices[0].Ports[0].Counters["port_rcv_errors"]; ok || s.Devices[0].Errors != nil {
			t.Errorf("port_rcv_errors present %v, errors %q; want absent, none", ok, s.Devices[0].Errors)
		}
	}
	if refused != 3 || rd.r.held != roceHeld {
		t.Errorf("port_rcv_errors read %d times, %d files held; want 3, %d", refused, rd.r.held, roceHeld)
	}
}

// A canceled read returns the context's error and leaves the Reader as
// it was, even when canceled inside a device; after Close, Read fails.
func TestReaderCanceledAndClosed(t *testing.T) {
	t.Parallel()
	root := fixture(t, "efa-p4d")
	rd := newTestReader(t, root)
	readerRead(t, rd)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := rd.Read(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled Read: %v, want context.Canceled", err)
	}
	sameAsRead(t, "after the canceled read", readerRead(t, rd), root)
	if rd.r.held != efaHeld {
		t.Errorf("%d files held, want %d", rd.r.held, efaHeld)
	}

	// Canceled inside a device, between its ports: the device stays
	// cached, its files held.
	two := fixture(t, "connectx-roce")
	copyTree(t, filepath.Join(two, bond, "ports/1"), filepath.Join(two, bond, "ports/2"))
	rd2 := newTestReader(t, two)
	readerRead(t, rd2)
	cached, held := rd2.r.devs["mlx5_bond_0"], rd2.r.held
	ctx, cancel = context.WithCancel(context.Background())
	rd2.r.readFile = func(h handle, name string, buf []byte) (int, error) {
		if name == "rx_write_requests" { // port 1's; the next is port 2
			cancel()
		}
		return readAt0(h, name, buf)
	}
	if _, err := rd2.Read(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Read canceled between ports: %v, want context.Canceled", err)
	}
	if rd2.r.devs["mlx5_bond_0"] != cached || rd2.r.held != held || held != 2*roceHeld {
		t.Errorf("after a cancel between ports: cache kept %v, %d files held, want %d",
			rd2.r.devs["mlx5_bond_0"] == cached, rd2.r.held, 2*roceHeld)
	}
	sameAsRead(t, "two ports", readerRead(t, rd2), two)

	if err := rd.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := rd.Read(context.Background()); !errors.Is(err, ErrClosed) {
		t.Errorf("Read after Close: %v, want ErrClosed", err)
	}
	if rd.r.held != 0 || len(rd.r.devs) != 0 || rd.r.class.f != nil {
		t.Errorf("after Close: %d files held, %d devices, class held %v", rd.r.held, len(rd.r.devs), rd.r.class.f != nil)
	}
}

// A Reader's read after the first allocates little: the Snapshot, its
// slices and the counter maps, which must be new each time. Not parallel:
// AllocsPerRun counts the whole process's allocations.
func TestReaderAllocations(t *testing.T) {
	rd := newTestReader(t, fixture(t, "connectx-ib"))
	readerRead(t, rd)
	// 8 devices: a Ports slice and two maps (a few allocations each) per
	// device; Read of the same tree makes about 1800.
	allocs := testing.AllocsPerRun(20, func() { readerRead(t, rd) })
	if allocs > 100 {
		t.Errorf("%.0f allocations a read, want at most 100", allocs)
	}
}

// Reads from several goroutines are serialized and each reads the tree
// (run with -race).
func TestReaderConcurrent(t *testing.T) {
	t.Parallel()
	root := fixture(t, "efa-p4d")
	want := readRoot(t, root)
	rd := newTestReader(t, root)
	errs := make(chan string, 4)
	for range 4 {
		go func() {
			diff := ""
			for range 5 {
				s, err := rd.Read(context.Background())
				if err != nil {
					diff = err.Error()
					break
				}
				if diff = cmp.Diff(want, s); diff != "" {
					break
				}
			}
			errs <- diff
		}()
	}
	for range 4 {
		if diff := <-errs; diff != "" {
			t.Errorf("concurrent Read (-want +got):\n%s", diff)
		}
	}
}
