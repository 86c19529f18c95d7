package kmsg

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// readAll reads every record of r and fails the test on an error.
func readAll(t testing.TB, r *Reader) []Record {
	t.Helper()
	var out []Record
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		out = append(out, rec)
	}
}

func readFixture(t *testing.T, name string, opts Options) ([]Record, Stats) {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := NewReader(f, opts)
	return readAll(t, r), r.Stats()
}

func TestFixtureDevKmsgRaw(t *testing.T) {
	boot := time.Date(2025, 2, 1, 0, 0, 0, 0, time.UTC)
	recs, st := readFixture(t, "devkmsg-raw.log", Options{BootTime: boot})
	if len(recs) != 47 {
		t.Fatalf("got %d records, want 47", len(recs))
	}
	for i, r := range recs {
		if r.Seq != uint64(3964+i) || r.Priority != 6 || r.Facility != 0 || r.Source != SourceKmsg {
			t.Errorf("record %d: seq %d prio %d fac %d source %s", i, r.Seq, r.Priority, r.Facility, r.Source)
		}
	}
	want := Record{Seq: 4006, HasSeq: true, Priority: 6, Facility: 0,
		Monotonic: 15519938051 * time.Microsecond, HasMonotonic: true,
		Time:    boot.Add(15519938051 * time.Microsecond),
		Message: "perf: interrupt took too long (7156 > 3926), lowering kernel.perf_event_max_sample_rate to 27750",
		Source:  SourceKmsg}
	if diff := cmp.Diff(want, recs[4006-3964]); diff != "" {
		t.Errorf("seq 4006 (-want +got):\n%s", diff)
	}
	// The file's last line has no newline; it is still a record.
	if last := recs[len(recs)-1]; last.Seq != 4010 || last.Message != "IPv6: ADDRCONF(NETDEV_CHANGE): calic24dd7712a6: link becomes ready" {
		t.Errorf("last record = %+v", last)
	}
	if diff := cmp.Diff(Stats{Lines: 47, Records: 47}, st); diff != "" {
		t.Errorf("stats (-want +got):\n%s", diff)
	}
}

func TestFixtureDmesgT(t *testing.T) {
	recs, st := readFixture(t, "dmesg-T-xid119.log", Options{Location: time.UTC})
	want := Record{Priority: -1, Facility: -1,
		Time:    time.Date(2025, 2, 23, 16, 24, 18, 0, time.UTC),
		Message: "NVRM: Xid (PCI:0000:9b:00): 119, pid=2024380, name=nvidia-smi, Timeout after 6s of waiting for RPC response from GPU4 GSP! Expected function 103 (GSP_RM_ALLOC) (0x2081 0x4).",
		Source:  SourceDmesgT}
	if diff := cmp.Diff(want, recs[2]); diff != "" {
		t.Errorf("record 2 (-want +got):\n%s", diff)
	}
	// The call trace joins the line that announced it: its lines start
	// with a space and carry the same stamp.
	var trace *Record
	for i := range recs {
		if strings.HasPrefix(recs[i].Message, "Call Trace:") {
			trace = &recs[i]
		}
	}
	wantTrace := "Call Trace:\n <TASK>\n show_stack+0x52/0x5c\n dump_stack_lvl+0x4a/0x63\n dump_stack+0x10/0x16\n os_dump_stack+0xe/0x14 [nvidia]\n _nv012454rm+0x437/0x4b0 [nvidia]"
	if trace == nil || trace.Message != wantTrace {
		t.Errorf("call trace record = %+v, want message %q", trace, wantTrace)
	}
	last := recs[len(recs)-1]
	if !last.Time.Equal(time.Date(2025, 2, 23, 16, 30, 13, 0, time.UTC)) || !strings.Contains(last.Message, "name=gpud") {
		t.Errorf("last record = %+v", last)
	}
	xids := 0
	for _, r := range recs {
		if strings.HasPrefix(r.Message, "NVRM: Xid") {
			xids++
		}
	}
	// 43 lines: the 6 space-led trace lines and 2 under "unwind …" join.
	if len(recs) != 43-8 || xids != 5 || st.Lines != 43 || st.Records != len(recs) {
		t.Errorf("got %d records, %d Xids, stats %+v; want 35, 5, 43 lines", len(recs), xids, st)
	}

	split, _ := readFixture(t, "dmesg-T-xid119.log", Options{Location: time.UTC, SplitSameStamp: true})
	if len(split) != 43 || split[28].Message != " show_stack+0x52/0x5c" {
		t.Errorf("SplitSameStamp: %d records, record 28 %q", len(split), split[28].Message)
	}
}

func TestFixtureDmesgISO(t *testing.T) {
	recs, st := readFixture(t, "dmesg-iso-xid13-oom.log", Options{})
	if len(recs) != 24 || st.Records != 24 || st.Skipped != 0 {
		t.Fatalf("got %d records, stats %+v; want 24", len(recs), st)
	}
	want := Record{Priority: 4, Facility: 0,
		Time:    time.Date(2025, 1, 21, 4, 41, 44, 287197000, time.UTC),
		Message: "NVRM: Xid (PCI:0000:38:00): 43, pid=2924364, name=pt_main_thread, Ch 00000008",
		Source:  SourceDecode}
	if diff := cmp.Diff(want, recs[16]); diff != "" {
		t.Errorf("record 16 (-want +got):\n%s", diff)
	}
	if got := recs[22].Message; !strings.HasPrefix(got, "oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=cri-containerd-") || !strings.HasSuffix(got, "task=node,pid=863987,uid=0") {
		t.Errorf("record 22 message = %q", got)
	}
}

// fixtureBytes is the three fixtures in one stream.
func fixtureBytes() ([]byte, error) {
	var all []byte
	for _, name := range []string{"devkmsg-raw.log", "dmesg-T-xid119.log", "dmesg-iso-xid13-oom.log"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			return nil, err
		}
		all = append(append(all, b...), '\n')
	}
	return all, nil
}
