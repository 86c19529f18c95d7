package simfleet

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/agent/kubecore"
	"github.com/gpuheal/gpuheal/internal/gpu/sim"
	"github.com/gpuheal/gpuheal/internal/simfleet/schedule"
)

// A fault pinned to a board hits the slot only while that board is its
// machine: after n-0 was replaced by n-0-r00beef (board 1), board 0's
// and board 2's faults are journaled as skipped and board 1's injected;
// a restarted fleet still knows the replacement is board 1.
func TestSimFleetHonoursTheFaultsBoard(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/schedule.jsonl"
	sched := []schedule.ScheduledFault{
		{At: 0, Slot: "n-0", Class: "hbm3-dbe", GPU: 1, Board: 0, Pinned: true},
		{At: time.Second, Slot: "n-0", Class: "hbm3-dbe", GPU: 2, Board: 2, Pinned: true},
		{At: 2 * time.Second, Slot: "n-0", Class: "hbm3-dbe", GPU: 3, Board: 1, Pinned: true},
	}
	if err := schedule.WriteSchedule(path, sched); err != nil {
		t.Fatal(err)
	}
	o, tmpl := simFleetTestOptions("")
	o.ScheduleFile = path
	f := newSimFleet(o, tmpl, nil, dir, slog.New(slog.DiscardHandler))
	if err := f.loadSchedule(); err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	node := func(name, replaces string, created time.Time) kubecore.Node {
		var n kubecore.Node
		n.Name, n.CreationTimestamp = name, metav1.NewTime(created)
		if replaces != "" {
			n.Annotations = map[string]string{v1alpha1.AnnotationReplaces: replaces}
		}
		return n
	}
	f.observeBoards([]kubecore.Node{node("n-0", "", t0)})
	f.observeBoards([]kubecore.Node{node("n-0-r00beef", "n-0", t0.Add(time.Hour)), node("n-1", "", t0)})
	n, err := sim.New(sim.Options{NodeName: "n-0-r00beef", GPUs: 8})
	if err != nil {
		t.Fatal(err)
	}
	f.agents["n-0-r00beef"] = &simAgent{name: "n-0-r00beef", node: n}
	f.injectDue(f.epoch.Add(time.Minute))
	got, err := schedule.ReadInjections(dir)
	if err != nil || len(got) != 3 {
		t.Fatalf("journal = %+v, %v", got, err)
	}
	for i, want := range []struct {
		board   int
		skipped string
	}{{0, "board 1 is in place"}, {2, "board 1 is in place"}, {1, ""}} {
		if got[i].Board != want.board || !strings.Contains(got[i].Skipped, want.skipped) || (want.skipped == "") != (got[i].Skipped == "") {
			t.Errorf("journal line %d = %+v; want board %d skipped %q", i, got[i], want.board, want.skipped)
		}
	}
	if got[2].Node != "n-0-r00beef" || got[2].GPU != 3 || !got[2].Fatal {
		t.Errorf("board 1's fault = %+v; want it on n-0-r00beef's GPU 3", got[2])
	}
	again := newSimFleet(o, tmpl, nil, dir, slog.New(slog.DiscardHandler))
	if err := again.loadSchedule(); err != nil {
		t.Fatal(err)
	}
	if slot, b, ok := again.lineage.SlotBoard("n-0-r00beef"); slot != "n-0" || b != 1 || !ok {
		t.Errorf("restarted fleet: n-0-r00beef is %s board %d (known %v), want n-0 board 1", slot, b, ok)
	}
}
