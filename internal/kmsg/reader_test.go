package kmsg

import (
	"bytes"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuheal/gpuheal/internal/gpu/sim"
)

// short is the part of a record most reader tests look at.
type short struct {
	Seq    uint64
	Source string
	Msg    string
}

func shorts(recs []Record) []short {
	out := make([]short, len(recs))
	for i, r := range recs {
		out[i] = short{r.Seq, r.Source, r.Message}
	}
	return out
}

func readString(t *testing.T, in string, opts Options) ([]Record, Stats) {
	t.Helper()
	r := NewReader(strings.NewReader(in), opts)
	return readAll(t, r), r.Stats()
}

func TestReaderForms(t *testing.T) {
	in := "6,1,100,-;raw one\n" +
		" SUBSYSTEM=pci\n" +
		" DEVICE=+pci:0000:00:01.0\n" +
		"[  600.000123] dmesg line\n" +
		"[Sun Feb 23 16:24:18 2025] dmesg -T line\n" +
		"2025-02-23T16:24:18,123456+00:00 iso line\n" +
		"kern  :warn  : decode line\n" +
		"Feb 23 16:24:18 node kernel: [ 1.000000] syslog line\n" +
		"Feb 23 16:24:18 node systemd[1]: not the kernel\n" +
		"Feb 23 16:24:18 node kernel: journal line\n" +
		"\n" +
		"plain line\n" +
		"6,2,200,-;raw two"
	recs, st := readString(t, in, Options{Location: time.UTC, Year: 2025})
	want := []short{
		{1, SourceKmsg, "raw one"},
		{0, SourceDmesg, "dmesg line"},
		{0, SourceDmesgT, "dmesg -T line"},
		{0, SourceISO, "iso line"},
		{0, SourceDecode, "decode line"},
		{0, SourceSyslog, "syslog line"},
		{0, SourceJournal, "journal line"},
		{0, SourcePlain, "plain line"},
		{2, SourceKmsg, "raw two"},
	}
	if diff := cmp.Diff(want, shorts(recs)); diff != "" {
		t.Errorf("records (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(Stats{Lines: 13, Records: 9, NotKernel: 1}, st); diff != "" {
		t.Errorf("stats (-want +got):\n%s", diff)
	}
}

// What the simulator writes, raw and as dmesg text, reads back as the
// records it wrote: multi-line records stay one record.
func TestReaderSimRoundTrip(t *testing.T) {
	simRecs := []sim.Record{
		{Priority: 4, Seq: 7, Usec: 14387209961, Message: "NVRM: The NVIDIA GPU 0000:5d:00.0\nNVRM: (PCI ID: 10de:2330) installed in this system has\nNVRM: fallen off the bus and is not responding to commands."},
		{Priority: 4, Seq: 8, Usec: 14387209961, Message: "NVRM: Xid (PCI:0000:5d:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."},
		{Priority: 6, Seq: 9, Usec: 14387300000, Message: "a\\b\tc"},
		{Priority: 6, Seq: 10, Usec: 5, Message: "API mismatch: x\n  indented second line"},
	}
	for _, form := range []struct {
		name string
		text string
		src  string
	}{{"raw", sim.FormatRaw(simRecs), SourceKmsg}, {"dmesg", sim.FormatDmesg(simRecs), SourceDmesg}} {
		t.Run(form.name, func(t *testing.T) {
			recs, st := readString(t, form.text, Options{})
			if len(recs) != len(simRecs) {
				t.Fatalf("got %d records, want %d: %+v", len(recs), len(simRecs), recs)
			}
			for i, r := range recs {
				s := simRecs[i]
				if r.Message != s.Message || r.Monotonic != time.Duration(s.Usec)*time.Microsecond || r.Source != form.src {
					t.Errorf("record %d = %q at %v (%s), want %q at %dus", i, r.Message, r.Monotonic, r.Source, s.Message, s.Usec)
				}
				if form.src == SourceKmsg && (r.Seq != s.Seq || r.Priority != s.Priority) {
					t.Errorf("record %d: seq %d prio %d, want %d %d", i, r.Seq, r.Priority, s.Seq, s.Priority)
				}
			}
			if st.Skipped != 0 || st.Lost != 0 || st.Reordered != 0 {
				t.Errorf("stats %+v", st)
			}
		})
	}
}

func TestReaderLongLines(t *testing.T) {
	huge := strings.Repeat("x", 1<<20)
	in := "[    1.000000] before\n" + huge + "\n[    2.000000] after\n" +
		"6,1,1,-;" + huge + "\n SUBSYSTEM=dictionary of the long raw record\n" +
		"[    3.000000] last\n" + huge // unterminated at the end too
	recs, st := readString(t, in, Options{})
	want := []short{{0, SourceDmesg, "before"}, {0, SourceDmesg, "after"}, {0, SourceDmesg, "last"}}
	if diff := cmp.Diff(want, shorts(recs)); diff != "" {
		t.Errorf("records (-want +got):\n%s", diff)
	}
	if st.TooLong != 3 || st.Lines != 7 || st.Skipped != 0 {
		t.Errorf("stats %+v, want 3 too long of 7 lines", st)
	}

	// A line of exactly MaxLineBytes is read; one byte more is not.
	longest := strings.Repeat("y", 100-len("[    1.000000] "))
	recs, st = readString(t, "[    1.000000] "+longest+"\n[    1.000000] "+longest+"y\n", Options{MaxLineBytes: 100})
	if len(recs) != 1 || recs[0].Message != longest || st.TooLong != 1 {
		t.Errorf("MaxLineBytes 100: %d records, stats %+v", len(recs), st)
	}
}

func TestReaderDamage(t *testing.T) {
	in := "[    1.000000] bad \xff\xfe utf8\n" +
		"\x00\x01\x02\x03binary\x00garbage\n" +
		"\x1b\x1b\x1b\x1b\x1bx\n" +
		"6,3964,2067\n" + // truncated raw record
		"6,abc,1,-;broken seq\n" +
		"6,5,1,-;ok\r\n" +
		"[    2.000000] tab\tand \x1b[1mescape\x1b[0m are text\n"
	recs, st := readString(t, in, Options{})
	want := []short{
		{0, SourceDmesg, "bad \uFFFD utf8"},
		{5, SourceKmsg, "ok"},
		{0, SourceDmesg, "tab\tand \x1b[1mescape\x1b[0m are text"},
	}
	if diff := cmp.Diff(want, shorts(recs)); diff != "" {
		t.Errorf("records (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(Stats{Lines: 7, Records: 3, Skipped: 4, InvalidUTF8: 1}, st); diff != "" {
		t.Errorf("stats (-want +got):\n%s", diff)
	}
}

func TestReaderSequence(t *testing.T) {
	raw := func(seqs ...string) string {
		var b strings.Builder
		for _, s := range seqs {
			b.WriteString("6," + s + ";m\n")
		}
		return b.String()
	}
	tests := []struct {
		name              string
		in                string
		lost, reordered   int
		wantSeqs          []uint64
		resume            *Position
		boot              string
		filtered, records int
	}{
		{name: "gaps", in: raw("1,10,-", "2,20,-", "5,50,-", "6,60,-", "9,90,-"), lost: 4},
		{name: "backwards and repeated", in: raw("1,10,-", "2,20,-", "4,40,-", "3,30,-", "3,30,-", "5,50,-"), lost: 1, reordered: 2},
		{name: "new boot in the stream", in: raw("100,600000000,-", "101,600000001,-", "0,1,-", "1,2,-"), lost: 0},
		{name: "resume skips what was read", in: raw("8,10,-", "9,20,-", "10,30,-", "11,40,-"),
			resume: &Position{BootID: "b1", Seq: 9}, boot: "b1", filtered: 2, records: 2},
		{name: "resume after the ring overwrote records", in: raw("15,10,-", "16,20,-"),
			resume: &Position{BootID: "b1", Seq: 9}, boot: "b1", lost: 5, records: 2},
		{name: "resume in another boot reads all", in: raw("0,10,-", "1,20,-"),
			resume: &Position{BootID: "b0", Seq: 9}, boot: "b1", records: 2},
		{name: "resume, then a reboot in the stream", in: raw("9,600000000,-", "10,600000001,-", "0,1,-", "1,2,-"),
			resume: &Position{BootID: "b1", Seq: 9}, boot: "b1", filtered: 1, records: 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			recs, st := readString(t, tc.in, Options{Resume: tc.resume, BootID: tc.boot})
			if tc.records == 0 {
				tc.records = strings.Count(tc.in, "\n")
			}
			if st.Lost != tc.lost || st.Reordered != tc.reordered || st.Filtered != tc.filtered || len(recs) != tc.records {
				t.Errorf("%d records, stats %+v; want %d records, lost %d, reordered %d, filtered %d",
					len(recs), st, tc.records, tc.lost, tc.reordered, tc.filtered)
			}
		})
	}
}

// Indented lines under a stamped line are the rest of its record; a
// joined record is split rather than grown past MaxLineBytes.
func TestReaderContinuation(t *testing.T) {
	in := "[  600.000123] first\n" +
		"               second\n" +
		"                 third, indented more\n" +
		"Feb 23 16:24:18 node kernel: journal\n" +
		"                             continued\n" +
		"plain\n" +
		"  plain lines are not continued\n"
	recs, _ := readString(t, in, Options{Year: 2025})
	want := []short{
		{0, SourceDmesg, "first\nsecond\n  third, indented more"},
		{0, SourceJournal, "journal\ncontinued"},
		{0, SourcePlain, "plain"},
		{0, SourcePlain, "  plain lines are not continued"},
	}
	if diff := cmp.Diff(want, shorts(recs)); diff != "" {
		t.Errorf("records (-want +got):\n%s", diff)
	}

	in = "[    1.000000] " + strings.Repeat("a", 40) + strings.Repeat("\n               "+strings.Repeat("b", 40), 3) + "\n"
	recs, _ = readString(t, in, Options{MaxLineBytes: 100})
	if len(recs) != 2 || len(recs[0].Message) > 100 || recs[1].Monotonic != time.Second {
		t.Errorf("capped join: %+v", recs)
	}
}

// However the input is cut into reads, the records are the same.
func TestReaderReadSizes(t *testing.T) {
	in, err := fixtureBytes()
	if err != nil {
		t.Fatal(err)
	}
	want := readAll(t, NewReader(bytes.NewReader(in), Options{}))
	for name, r := range map[string]io.Reader{
		"one byte": iotest.OneByteReader(bytes.NewReader(in)),
		"half":     iotest.HalfReader(bytes.NewReader(in)),
		"data+EOF": iotest.DataErrReader(bytes.NewReader(in)),
	} {
		got := readAll(t, NewReader(r, Options{MaxLineBytes: 1000}))
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: records differ (-whole +%s):\n%s", name, name, diff)
		}
	}
}

func TestReaderError(t *testing.T) {
	boom := errors.New("boom")
	r := NewReader(io.MultiReader(strings.NewReader("[ 1.0] a\n[ 2.0] b\n"), iotest.ErrReader(boom)), Options{})
	var msgs []string
	var err error
	for err == nil {
		var rec Record
		if rec, err = r.Next(); err == nil {
			msgs = append(msgs, rec.Message)
		}
	}
	if !errors.Is(err, boom) || len(msgs) != 2 {
		t.Errorf("got %q, %v; want both records, then boom", msgs, err)
	}
	if _, err2 := r.Next(); !errors.Is(err2, boom) {
		t.Errorf("second Next after error = %v, want boom again", err2)
	}
}

// printable checks eight bytes at a time; it must agree with the plain
// byte test for every byte value at every position.
func TestPrintable(t *testing.T) {
	for n := 1; n <= 17; n++ {
		for pos := range n {
			for v := range 256 {
				b := bytes.Repeat([]byte{'a'}, n)
				b[pos] = byte(v)
				want := v >= ' ' && v < 0x7f
				if got := printable(b); got != want {
					t.Fatalf("printable(%q) = %v, want %v", b, got, want)
				}
			}
		}
	}
}

// endless yields n bytes of 'x', then tail, without holding them.
type endless struct {
	n    int
	tail *strings.Reader
}

func (e *endless) Read(p []byte) (int, error) {
	if e.n == 0 {
		return e.tail.Read(p)
	}
	k := min(len(p), e.n)
	for i := range k {
		p[i] = 'x'
	}
	e.n -= k
	return k, nil
}

// A line of 64 MiB costs the reader its buffer, not the line.
func TestReaderMemoryBounded(t *testing.T) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	r := NewReader(&endless{n: 64 << 20, tail: strings.NewReader("\n[    1.000000] ok\n")}, Options{})
	recs := readAll(t, r)
	runtime.ReadMemStats(&after)
	if len(recs) != 1 || recs[0].Message != "ok" || r.Stats().TooLong != 1 {
		t.Errorf("records %+v, stats %+v", recs, r.Stats())
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
		t.Errorf("allocated %d bytes reading a 64 MiB line", alloc)
	}
}
