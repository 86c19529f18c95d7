package kmsg

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	testingclock "k8s.io/utils/clock/testing"
)

// ring is a fake kernel ring buffer as SYSLOG_ACTION_READ_ALL returns it:
// the newest size bytes of what was logged, cut at a line start.
type ring struct {
	lines []string
	size  int
	calls int
}

func (r *ring) read(b []byte) (int, error) {
	r.calls++
	s := strings.Join(r.lines, "")
	for len(s) > r.size {
		_, s, _ = strings.Cut(s, "\n")
	}
	return copy(b, s), nil
}

func (r *ring) log(lines ...string) { r.lines = append(r.lines, lines...) }

func messages(t *testing.T, s *Syslog) (out []string) {
	t.Helper()
	if err := s.Poll(func(rec Record) error {
		if !rec.HasSeq || rec.Seq != uint64(rec.Monotonic/time.Microsecond) {
			t.Errorf("record %q: seq %d (has %v), want its stamp in µs", rec.Message, rec.Seq, rec.HasSeq)
		}
		out = append(out, rec.Message)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestSyslogReturnsEachRecordOnce(t *testing.T) {
	r := &ring{size: 1 << 10}
	r.log("<6>[    0.000000] Linux version 6.8\n", "<6>[    0.000000] Command line: quiet\n",
		"<4>[   12.345678] NVRM: Xid (PCI:0000:05:00): 79, GPU has fallen off the bus.\n")
	s := NewSyslog(r.read, r.size, Options{})
	// Records of one poll that share a stamp are all returned.
	if diff := cmp.Diff([]string{"Linux version 6.8", "Command line: quiet", "NVRM: Xid (PCI:0000:05:00): 79, GPU has fallen off the bus."}, messages(t, s)); diff != "" {
		t.Errorf("first poll (-want +got):\n%s", diff)
	}
	if got := messages(t, s); got != nil {
		t.Errorf("poll with nothing new = %q", got)
	}
	r.log("<3>[   13.000001] BUG: soft lockup - CPU#1 stuck for 23s!\n", "<6>[   13.000002] next\n")
	if diff := cmp.Diff([]string{"BUG: soft lockup - CPU#1 stuck for 23s!", "next"}, messages(t, s)); diff != "" {
		t.Errorf("after two more (-want +got):\n%s", diff)
	}
	if st := s.Stats(); st.Records != 5 || st.Skipped != 0 {
		t.Errorf("stats = %+v, want 5 records", st)
	}
}

func TestSyslogRingWrapped(t *testing.T) {
	r := &ring{size: 80}
	r.log("<6>[    1.000000] first\n")
	s := NewSyslog(r.read, 1<<10, Options{})
	messages(t, s)
	for i := range 5 {
		r.log("<6>[    2.00000" + string(rune('0'+i)) + "] flood line that fills the ring\n")
	}
	// The ring kept the newest lines only: those come, nothing twice.
	got := messages(t, s)
	if len(got) == 0 || len(got) >= 5 || got[len(got)-1] != "flood line that fills the ring" {
		t.Errorf("after the ring wrapped: %q", got)
	}
}

func TestSyslogResumesAndSkipsUnstamped(t *testing.T) {
	r := &ring{size: 1 << 10}
	r.log("<6>[    5.000000] old\n", "<6>no stamp at all\n", "<6>[    6.500000] new\n")
	s := NewSyslog(r.read, r.size, Options{BootID: "b", Resume: &Position{BootID: "b", Seq: 5_000_000}})
	if diff := cmp.Diff([]string{"new"}, messages(t, s)); diff != "" {
		t.Errorf("resumed (-want +got):\n%s", diff)
	}
	if st := s.Stats(); st.Skipped != 1 {
		t.Errorf("stats = %+v, want the unstamped line skipped", st)
	}
	// Another boot's position covers nothing.
	s = NewSyslog(r.read, r.size, Options{BootID: "c", Resume: &Position{BootID: "b", Seq: 5_000_000}})
	if got := messages(t, s); len(got) != 2 {
		t.Errorf("other boot's position: %q, want both stamped records", got)
	}
}

func TestSyslogRunPollsOnTheClock(t *testing.T) {
	r := &ring{size: 1 << 10}
	r.log("<6>[    1.000000] a\n")
	clk := testingclock.NewFakeClock(time.Unix(0, 0))
	s := NewSyslog(r.read, r.size, Options{Clock: clk, PollInterval: time.Second})
	recs := make(chan string, 4)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, func(rec Record) error { recs <- rec.Message; return nil }) }()
	if m := <-recs; m != "a" {
		t.Fatalf("first record %q", m)
	}
	// The ticker exists before the first poll; its channel keeps a tick
	// stepped before Run waits for it.
	r.log("<6>[    2.000000] b\n")
	clk.Step(time.Second)
	if m := <-recs; m != "b" {
		t.Fatalf("second record %q", m)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestLineStamp(t *testing.T) {
	for line, want := range map[string]int64{
		"<6>[    0.000000] x": 0, "<6>[12345.678901] x": 12345678901, "[    1.000002] x": 1000002,
		"<6>x": -1, "<6>[ 1.5] x": -1, "<6>[abc.def123] x": -1, "": -1, "]<6>[": -1,
	} {
		us, ok := lineStamp([]byte(line))
		if got := map[bool]int64{true: int64(us), false: -1}[ok]; got != want {
			t.Errorf("lineStamp(%q) = %d, want %d", line, got, want)
		}
	}
}

// FuzzSyslogPoll: whatever the ring holds, a poll never panics, returns
// only stamped records, and a second poll of the same ring returns none.
func FuzzSyslogPoll(f *testing.F) {
	f.Add("<6>[    0.000000] a\n<6>[    1.000000] b\n")
	f.Add("<6>[ 1.000000] a\n  continued\n<4>garbage\x00\n[")
	f.Fuzz(func(t *testing.T, content string) {
		read := func(b []byte) (int, error) { return copy(b, content), nil }
		s := NewSyslog(read, len(content)+1, Options{})
		if err := s.Poll(func(rec Record) error {
			if !rec.HasSeq || !rec.HasMonotonic {
				t.Fatalf("unstamped record %+v", rec)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		_ = s.Poll(func(rec Record) error {
			t.Fatalf("record %q returned twice", rec.Message)
			return nil
		})
	})
}
