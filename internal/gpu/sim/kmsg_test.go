package sim

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestRecordRendering(t *testing.T) {
	tests := []struct {
		name       string
		rec        Record
		raw, dmesg string
	}{{
		name:  "plain",
		rec:   Record{Priority: 4, Seq: 3964, Usec: 206764307, Message: "NVRM: Xid (PCI:0000:18:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."},
		raw:   "4,3964,206764307,-;NVRM: Xid (PCI:0000:18:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
		dmesg: "[  206.764307] NVRM: Xid (PCI:0000:18:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
	}, {
		name:  "multi-line record",
		rec:   Record{Priority: 4, Seq: 7, Usec: 14387209961, Message: "NVRM: The NVIDIA GPU 0000:5d:00.0\nNVRM: (PCI ID: 10de:2330) installed in this system has\nNVRM: fallen off the bus and is not responding to commands."},
		raw:   `4,7,14387209961,-;NVRM: The NVIDIA GPU 0000:5d:00.0\x0aNVRM: (PCI ID: 10de:2330) installed in this system has\x0aNVRM: fallen off the bus and is not responding to commands.`,
		dmesg: "[14387.209961] NVRM: The NVIDIA GPU 0000:5d:00.0\n               NVRM: (PCI ID: 10de:2330) installed in this system has\n               NVRM: fallen off the bus and is not responding to commands.",
	}, {
		name:  "escapes",
		rec:   Record{Priority: 6, Seq: 0, Usec: 5, Message: "a\\b\tc\xffd"},
		raw:   `6,0,5,-;a\x5cb\x09c\xffd`,
		dmesg: "[    0.000005] a\\b\tc\xffd",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.rec.Raw(); got != tc.raw {
				t.Errorf("Raw:\n got %s\nwant %s", got, tc.raw)
			}
			if got := tc.rec.Dmesg(); got != tc.dmesg {
				t.Errorf("Dmesg:\n got %s\nwant %s", got, tc.dmesg)
			}
		})
	}
	recs := []Record{tests[0].rec, tests[2].rec}
	if got, want := FormatRaw(recs), tests[0].raw+"\n"+tests[2].raw+"\n"; got != want {
		t.Errorf("FormatRaw = %q, want %q", got, want)
	}
	if got, want := FormatDmesg(recs), tests[0].dmesg+"\n"+tests[2].dmesg+"\n"; got != want {
		t.Errorf("FormatDmesg = %q, want %q", got, want)
	}
}

// The writer gets the same records, one raw line per Write, and sequence
// numbers and times come from the node's clock and uptime.
func TestKernelLogWriter(t *testing.T) {
	var sb strings.Builder
	n, clk := newTestNode(t, Options{KernelLog: &sb, Uptime: time.Hour})
	clk.Step(1234567 * time.Microsecond)
	if err := n.Inject(Fault{Kind: KindFellOffBus, GPU: 0}); err != nil {
		t.Fatal(err)
	}
	clk.Step(time.Second)
	if err := n.Inject(Fault{Kind: KindXid, GPU: 1, Params: params{"code": "43", "pid": "1", "name": "x"}}); err != nil {
		t.Fatal(err)
	}
	want := "4,0,3601234567,-;NVRM: Xid (PCI:0000:18:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n" +
		`4,1,3601234567,-;NVRM: The NVIDIA GPU 0000:18:00.0\x0aNVRM: (PCI ID: 10de:2330) installed in this system has\x0aNVRM: fallen off the bus and is not responding to commands.` + "\n" +
		"4,2,3602234567,-;NVRM: Xid (PCI:0000:2a:00): 43, pid=1, name=x, Ch 00000008\n"
	if diff := cmp.Diff(want, sb.String()); diff != "" {
		t.Errorf("writer (-want +got):\n%s", diff)
	}
	if got := FormatRaw(n.KernelLog(0)); got != want {
		t.Errorf("KernelLog(0) differs from the writer:\n%s", got)
	}
	if got := n.KernelLog(2); len(got) != 1 || got[0].Seq != 2 {
		t.Errorf("KernelLog(2) = %v", got)
	}
	if got := n.KernelLog(3); got != nil {
		t.Errorf("KernelLog(3) = %v", got)
	}
}

// A clock set back does not make the kernel log run backwards.
func TestKernelLogMonotonic(t *testing.T) {
	n, clk := newTestNode(t, Options{})
	clk.Step(time.Minute)
	if err := n.Inject(Fault{Kind: KindDBE}); err != nil {
		t.Fatal(err)
	}
	clk.SetTime(t0.Add(-time.Hour)) // before boot, even
	if err := n.Inject(Fault{Kind: KindDBE}); err != nil {
		t.Fatal(err)
	}
	recs := n.KernelLog(0)
	if recs[0].Usec != 660_000_000 || recs[1].Usec != recs[0].Usec {
		t.Errorf("usec = %d, %d", recs[0].Usec, recs[1].Usec)
	}
}

func TestKernelLogRing(t *testing.T) {
	n, _ := newTestNode(t, Options{KernelLogSize: 3})
	for range 10 {
		if err := n.Inject(Fault{Kind: KindDBE}); err != nil {
			t.Fatal(err)
		}
	}
	var seqs []uint64
	for _, r := range n.KernelLog(0) {
		seqs = append(seqs, r.Seq)
	}
	if diff := cmp.Diff([]uint64{7, 8, 9}, seqs); diff != "" {
		t.Errorf("kept seqs (-want +got):\n%s", diff)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// A writer failure is reported, but the fault and the kept record stand.
func TestKernelLogWriterError(t *testing.T) {
	n, _ := newTestNode(t, Options{KernelLog: failingWriter{}})
	err := n.Inject(Fault{Kind: KindNVLinkDown, GPU: 0, Params: params{"link": "0"}})
	if err == nil || err.Error() != "writing kernel log: disk full" {
		t.Fatalf("Inject = %v", err)
	}
	if len(n.KernelLog(0)) != 1 || snapshot(t, n).GPUs[0].NVLink[0].Active {
		t.Error("fault not applied after a writer error")
	}
}
