package kmsg

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"
)

// follower runs a Follower on a fake clock; poll steps the clock and
// returns the messages that poll emitted.
type follower struct {
	t      *testing.T
	clk    *testingclock.FakeClock
	f      *Follower
	recs   chan Record
	polled chan struct{}
	done   chan error
	cancel context.CancelFunc
}

func startFollower(t *testing.T, path string, opts Options) (*follower, []string) {
	t.Helper()
	clk := testingclock.NewFakeClock(time.Date(2025, 2, 23, 0, 0, 0, 0, time.UTC))
	opts.Clock = clk
	h := &follower{t: t, clk: clk, f: NewFollower(path, opts),
		recs: make(chan Record, 100), polled: make(chan struct{}, 1), done: make(chan error, 1)}
	h.f.afterPoll = func() { h.polled <- struct{}{} }
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	t.Cleanup(cancel)
	go func() { h.done <- h.f.Run(ctx, func(r Record) error { h.recs <- r; return nil }) }()
	return h, h.collect()
}

// collect waits for the poll to finish and returns what it emitted.
func (h *follower) collect() []string {
	h.t.Helper()
	select {
	case <-h.polled:
	case err := <-h.done:
		h.t.Fatalf("Run ended: %v", err)
	case <-time.After(10 * time.Second):
		h.t.Fatal("no poll within 10s")
	}
	var msgs []string
	for {
		select {
		case r := <-h.recs:
			msgs = append(msgs, r.Message)
		default:
			return msgs
		}
	}
}

func (h *follower) poll() []string {
	h.t.Helper()
	h.clk.Step(time.Second)
	return h.collect()
}

func (h *follower) expect(got []string, want ...string) {
	h.t.Helper()
	if strings.Join(got, "|") != strings.Join(want, "|") {
		h.t.Errorf("poll emitted %q, want %q", got, want)
	}
}

func TestFollow(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "kern.log")
	h, got := startFollower(t, path, Options{}) // the file does not exist yet
	h.expect(got)

	appendFile(t, path, "[    1.000000] one\n6,5,100,-;raw five\n SUBSYSTEM=pci\n")
	h.expect(h.poll(), "one", "raw five")

	// A line without its newline yet waits for one more quiet poll.
	appendFile(t, path, "[    2.000000] two\n[    3.000000] thr")
	h.expect(h.poll(), "two")
	appendFile(t, path, "ee")
	h.expect(h.poll())
	h.expect(h.poll(), "three")

	// A 1 MiB line written in pieces is dropped; the next line is read.
	appendFile(t, path, strings.Repeat("x", 1<<19))
	h.expect(h.poll())
	appendFile(t, path, strings.Repeat("x", 1<<19))
	h.expect(h.poll())
	appendFile(t, path, "x\n[    4.000000] four\n")
	h.expect(h.poll(), "four")

	// copytruncate: the file shrinks, and is read from its start.
	if err := os.WriteFile(path, []byte("[    5.000000] five\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h.expect(h.poll(), "five")

	// Rotation: the old file is read to its end, then the new one.
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	appendFile(t, path+".1", "[    6.000000] six, late in the old file\n")
	h.expect(h.poll(), "six, late in the old file")
	appendFile(t, path, "[    7.000000] seven\n")
	h.expect(h.poll(), "seven")

	st := h.f.Stats()
	if st.TooLong != 1 || st.Records != 8 {
		t.Errorf("stats %+v, want 8 records and 1 too long", st)
	}
	h.cancel()
	if err := <-h.done; err != nil {
		t.Errorf("Run after cancel = %v, want nil", err)
	}
}

func TestFollowFromEnd(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kmsg.log")
	appendFile(t, path, rawLines(0, 9))
	h, got := startFollower(t, path, Options{FromEnd: true})
	h.expect(got)
	appendFile(t, path, "4,10,2000100,-;new\n")
	h.expect(h.poll(), "new")

	// A file that appears after the first poll is new: read whole.
	late := filepath.Join(t.TempDir(), "late.log")
	h, got = startFollower(t, late, Options{FromEnd: true})
	h.expect(got)
	appendFile(t, late, "4,0,1,-;first\n")
	h.expect(h.poll(), "first")
}

func TestFollowEmitError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kmsg.log")
	appendFile(t, path, rawLines(0, 1))
	boom := errors.New("boom")
	clk := testingclock.NewFakeClock(time.Now())
	err := Follow(context.Background(), path, Options{Clock: clk}, func(Record) error { return boom })
	if !errors.Is(err, boom) {
		t.Errorf("Follow = %v, want boom", err)
	}
}
