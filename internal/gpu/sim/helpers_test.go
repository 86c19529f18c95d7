package sim

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	fakeclock "k8s.io/utils/clock/testing"

	"github.com/gpuheal/gpuheal/internal/gpu"
)

// t0 is a fixed wall time for fake clocks.
var t0 = time.Date(2025, 2, 23, 16, 24, 18, 0, time.UTC)

// newTestNode builds a node on a fake clock at t0; opts.Clock is replaced.
func newTestNode(t testing.TB, opts Options) (*Node, *fakeclock.FakeClock) {
	t.Helper()
	clk := fakeclock.NewFakeClock(t0)
	opts.Clock = clk
	n, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return n, clk
}

func snapshot(t testing.TB, n *Node) *gpu.NodeSnapshot {
	t.Helper()
	s, err := n.Snapshot(context.Background())
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	return s
}

func snapshotJSON(t testing.TB, n *Node) []byte {
	t.Helper()
	b, err := json.Marshal(snapshot(t, n))
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	return b
}

// logLine is a record without its sequence number and time, for tables.
type logLine struct {
	Prio int
	Msg  string
}

func logLines(recs []Record) []logLine {
	var out []logLine
	for _, r := range recs {
		out = append(out, logLine{r.Priority, r.Message})
	}
	return out
}

func lw(msg string) logLine { return logLine{LevelWarning, msg} }
func li(msg string) logLine { return logLine{LevelInfo, msg} }
