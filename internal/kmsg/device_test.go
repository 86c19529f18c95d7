package kmsg

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fakeDevice returns one record per Read, as /dev/kmsg does, or the
// error queued in its place.
type fakeDevice struct {
	reads []any // string or error
	calls int
}

func (f *fakeDevice) Read(p []byte) (int, error) {
	f.calls++
	if len(f.reads) == 0 {
		return 0, io.EOF
	}
	r := f.reads[0]
	f.reads = f.reads[1:]
	if err, ok := r.(error); ok {
		return 0, err
	}
	s := r.(string)
	if len(p) < len(s) {
		return 0, syscall.EINVAL // the kernel's answer to a short buffer
	}
	return copy(p, s), nil
}

func readDevice(t *testing.T, d *Device) ([]Record, error) {
	t.Helper()
	var out []Record
	for {
		rec, err := d.Next()
		if err != nil {
			return out, err
		}
		out = append(out, rec)
	}
}

func TestDevice(t *testing.T) {
	fake := &fakeDevice{reads: []any{
		"6,1,100,-;one\n",
		"6,2,200,-;two\n SUBSYSTEM=pci\n DEVICE=+pci:0000:00:01.0\n",
		syscall.EPIPE, // records 3-6 were overwritten before we read them
		"4,7,700,-;NVRM: The NVIDIA GPU 0000:5d:00.0\\x0aNVRM: (PCI ID: 10de:2330) installed\n",
		"garbage",
		"6,8,800,-;" + string(make([]byte, 9000)) + "\n", // long, still one read
	}}
	boot := time.Date(2025, 2, 1, 0, 0, 0, 0, time.UTC)
	d := NewDevice(fake, Options{BootTime: boot})
	recs, err := readDevice(t, d)
	if !errors.Is(err, io.EOF) {
		t.Fatalf("Next = %v, want io.EOF at the fake's end", err)
	}
	want := []short{
		{1, SourceKmsg, "one"},
		{2, SourceKmsg, "two"},
		{7, SourceKmsg, "NVRM: The NVIDIA GPU 0000:5d:00.0\nNVRM: (PCI ID: 10de:2330) installed"},
		{8, SourceKmsg, string(make([]byte, 9000))},
	}
	if diff := cmp.Diff(want, shorts(recs)); diff != "" {
		t.Errorf("records (-want +got):\n%s", diff)
	}
	if got := recs[0].Time; !got.Equal(boot.Add(100 * time.Microsecond)) {
		t.Errorf("wall time %v", got)
	}
	if diff := cmp.Diff(Stats{Lines: 5, Records: 4, Skipped: 1, Lost: 4, Overruns: 1}, d.Stats()); diff != "" {
		t.Errorf("stats (-want +got):\n%s", diff)
	}
}

func TestDeviceResumeAndErrors(t *testing.T) {
	fake := &fakeDevice{reads: []any{"6,5,1,-;old\n", "6,6,2,-;seen\n", "6,7,3,-;new\n"}}
	recs, _ := readDevice(t, NewDevice(fake, Options{Resume: &Position{BootID: "b", Seq: 6}, BootID: "b"}))
	if len(recs) != 1 || recs[0].Seq != 7 {
		t.Errorf("resume: %+v", recs)
	}

	boom := errors.New("boom")
	if _, err := readDevice(t, NewDevice(&fakeDevice{reads: []any{boom}}, Options{})); !errors.Is(err, boom) {
		t.Errorf("read error: %v", err)
	}
	// A source that only ever fails with EPIPE must not spin forever.
	var epipes []any
	for range 1000 {
		epipes = append(epipes, syscall.EPIPE)
	}
	spin := &fakeDevice{reads: epipes}
	if _, err := readDevice(t, NewDevice(spin, Options{})); !errors.Is(err, io.ErrNoProgress) || spin.calls > maxIdleReads {
		t.Errorf("endless EPIPE: %v after %d reads", err, spin.calls)
	}
}

func TestOpenDeviceFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kmsg")
	if err := os.WriteFile(path, []byte("6,42,1000,-;from a file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		start Start
		want  int
	}{{StartOldest, 1}, {StartAfterClear, 1}, {StartNewest, 0}} {
		d, err := OpenDevice(path, Options{Start: tc.start})
		if err != nil {
			t.Fatal(err)
		}
		recs, err := readDevice(t, d)
		if !errors.Is(err, io.EOF) || len(recs) != tc.want || (tc.want == 1 && recs[0].Seq != 42) {
			t.Errorf("start %d: %+v, %v", tc.start, recs, err)
		}
		if err := d.Close(); err != nil {
			t.Error(err)
		}
	}
	if _, err := OpenDevice(path+".missing", Options{}); err == nil {
		t.Error("missing device: want an error")
	}
}

// The real device, where the test may read it: one record per read, and
// Close ends a Next that waits for the kernel.
func TestOpenDeviceReal(t *testing.T) {
	d, err := OpenDevice("", Options{})
	if err != nil {
		t.Skipf("no readable /dev/kmsg: %v", err)
	}
	rec, err := d.Next()
	if err != nil {
		d.Close()
		t.Skipf("reading /dev/kmsg: %v", err)
	}
	if !rec.HasSeq || !rec.HasMonotonic || rec.Source != SourceKmsg {
		t.Errorf("first record %+v", rec)
	}
	d.Close()

	d, err = OpenDevice("", Options{Start: StartNewest})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := d.Next()
		done <- err
	}()
	time.AfterFunc(50*time.Millisecond, func() { d.Close() })
	select {
	case err := <-done:
		if err == nil {
			t.Log("a record arrived before Close")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not end a blocked Next")
	}
}
