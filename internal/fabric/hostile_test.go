//go:build unix

package fabric

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A broken or hostile sysfs must cost bounded time and memory: a FIFO
// where a counter should be would block a plain read forever, a huge
// file or directory would be read whole.
func TestHostileTree(t *testing.T) {
	t.Parallel()
	root := fixture(t, "connectx-roce")
	dir := filepath.Join(root, bond, "ports/1")
	for _, f := range []string{"counters/port_xmit_wait", "state"} {
		if err := os.Remove(filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mkfifo(filepath.Join(dir, f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(t, root, bond+"/fw_ver", strings.Repeat("9", 64<<10))
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "counters/port_rcv_data_zero")); err != nil {
		t.Fatal(err)
	}
	for i := range maxCounters {
		write(t, root, bond+"/ports/1/hw_counters/extra_"+strconv.Itoa(i), "1\n")
	}
	d := readRoot(t, root).Devices[0]
	p := d.Ports[0]
	if p.State != "" || p.PhysState != "LinkUp" || d.FirmwareVersion != "" {
		t.Errorf("state %q, phys_state %q, fw_ver %d bytes; want \"\", LinkUp, \"\"", p.State, p.PhysState, len(d.FirmwareVersion))
	}
	if _, ok := p.Counters["port_xmit_wait"]; ok {
		t.Error("a FIFO was read as a counter")
	}
	if len(p.HWCounters) > maxCounters {
		t.Errorf("%d hw_counters, want at most %d", len(p.HWCounters), maxCounters)
	}
	for _, want := range []string{
		"fw_ver: longer than 4096 bytes",
		"ports/1/state: not a regular file",
		"ports/1/counters/port_rcv_data_zero: not a regular file",
		"ports/1/counters/port_xmit_wait: not a regular file",
		"ports/1/hw_counters: more than 256 entries; read 256",
	} {
		if !contains(d.Errors, want) {
			t.Errorf("errors %q lack %q", d.Errors, want)
		}
	}
}

// The file budget caps one Read whatever the tree holds.
func TestReadBudget(t *testing.T) {
	t.Parallel()
	r := newReader()
	r.files = maxFiles - 3
	s, err := r.read(context.Background(), ReadOptions{Root: fixture(t, "connectx-roce")})
	if err != nil {
		t.Fatal(err)
	}
	d := s.Devices[0]
	want := []string{"ports/1/state: " + errBudget.Error()} // once, not once per file left
	if diff := cmp.Diff(want, d.Errors); diff != "" || d.BoardID == "" || len(d.Ports[0].Counters) != 0 {
		t.Errorf("board %q, %d counters, errors (-want +got):\n%s", d.BoardID, len(d.Ports[0].Counters), diff)
	}

	// With the budget spent before a device, the device is not read.
	r = newReader()
	r.files = maxFiles
	s, err = r.read(context.Background(), ReadOptions{Root: fixture(t, "efa-p4d")})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{errBudget.Error() + ": 4 devices not read"}, s.Errors); diff != "" || len(s.Devices) != 0 {
		t.Errorf("%d devices, errors (-want +got):\n%s", len(s.Devices), diff)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
