package detect

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuheal/gpuheal/internal/finding"
	"github.com/gpuheal/gpuheal/internal/xid"
)

// t0 is a fixed message time for tables.
var t0 = time.Date(2025, 2, 23, 16, 24, 18, 0, time.UTC)

// bootTime anchors raw /dev/kmsg timestamps (µs since boot) in tests.
var bootTime = time.Date(2025, 2, 20, 0, 0, 0, 0, time.UTC)

func newDetector(t testing.TB) *Detector {
	t.Helper()
	return New(xid.Default(), Options{Now: func() time.Time {
		t.Fatal("Now called: every test message has a time")
		return time.Time{}
	}})
}

// fnd builds an expected finding at t0 with Source "kmsg".
func fnd(code string, x uint64, gpu string, sev finding.Severity, act finding.Action, msg string) finding.Finding {
	return finding.Finding{Source: "kmsg", Code: code, Xid: x, GPU: gpu, Severity: sev, Action: act, Time: t0, Message: msg}
}

// stripPrefix is a test-only stand-in for internal/kmsg: it splits a
// captured line into its time and message for the three prefix forms of
// the fixtures — raw /dev/kmsg ("6,3964,206764307,-;msg"), dmesg -T
// ("[Sun Feb 23 16:24:18 2025] msg") and dmesg --time-format iso with
// levels ("kern  :warn  : 2025-01-21T04:41:44,283302+00:00 msg").
func stripPrefix(t testing.TB, line string) (time.Time, string) {
	t.Helper()
	switch {
	case strings.HasPrefix(line, "["):
		stamp, msg, ok := strings.Cut(line[1:], "] ")
		if !ok {
			t.Fatalf("dmesg -T line without ']': %q", line)
		}
		ts, err := time.Parse("Mon Jan _2 15:04:05 2006", stamp)
		if err != nil {
			t.Fatalf("dmesg -T time %q: %v", stamp, err)
		}
		return ts, msg
	case strings.HasPrefix(line, "kern"):
		_, rest, ok := strings.Cut(line, ": ") // after "kern  :warn  "
		if !ok {
			t.Fatalf("iso line: %q", line)
		}
		stamp, msg, _ := strings.Cut(strings.TrimLeft(rest, " "), " ")
		ts, err := time.Parse(time.RFC3339Nano, strings.Replace(stamp, ",", ".", 1))
		if err != nil {
			t.Fatalf("iso time %q: %v", stamp, err)
		}
		return ts, msg
	default:
		head, msg, ok := strings.Cut(line, ";")
		fields := strings.Split(head, ",")
		if !ok || len(fields) < 3 {
			t.Fatalf("raw kmsg line: %q", line)
		}
		usec, err := strconv.ParseUint(fields[2], 10, 64)
		if err != nil {
			t.Fatalf("raw kmsg time %q: %v", fields[2], err)
		}
		return bootTime.Add(time.Duration(usec) * time.Microsecond), msg
	}
}

// detectFile runs a fixture through one detector, line by line.
func detectFile(t *testing.T, name string) []finding.Finding {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d := newDetector(t)
	var out []finding.Finding
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if sc.Text() == "" {
			continue
		}
		ts, msg := stripPrefix(t, sc.Text())
		out = d.Append(out, msg, ts)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
