package schedule

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func fleet(n int) []string {
	slots := make([]string, n)
	for i := range slots {
		slots[i] = fmt.Sprintf("gpu-node-%04d", i)
	}
	return slots
}

// One seed draws the same faults on the same boards; another seed does
// not; every fault is pinned to a board that the Boards report knows.
func TestDrawBoardScheduleSameSeed(t *testing.T) {
	slots := fleet(40)
	h := DefaultHazard()
	a := DrawBoardSchedule(7, slots, 8, 2, 6*time.Hour, h)
	b := DrawBoardSchedule(7, slots, 8, 2, 6*time.Hour, h)
	if diff := cmp.Diff(a, b); diff != "" {
		t.Fatalf("same seed, different schedules (-a +b):\n%s", diff)
	}
	if c := DrawBoardSchedule(8, slots, 8, 2, 6*time.Hour, h); cmp.Equal(a, c) {
		t.Fatal("seeds 7 and 8 drew the same schedule")
	}
	boards := map[string]Board{}
	for _, bd := range Boards(7, slots, MaxBoards, 2, h) {
		boards[fmt.Sprint(bd.Slot, "/", bd.Board)] = bd
	}
	perBoard := map[int]int{}
	for i, f := range a {
		if !f.Pinned {
			t.Fatalf("fault %d %+v is not pinned to a board", i, f)
		}
		if _, ok := boards[fmt.Sprint(f.Slot, "/", f.Board)]; !ok {
			t.Fatalf("fault %d on an unknown board %+v", i, f)
		}
		if i > 0 && a[i-1].At > f.At {
			t.Fatal("schedule not sorted by time")
		}
		perBoard[f.Board]++
	}
	if perBoard[0] == 0 || perBoard[1] == 0 {
		t.Fatalf("faults per board generation %v: want boards 0 and 1 to have some", perBoard)
	}
	// A board's faults come from its own stream: a negligible lemon share
	// (no lemon drawn, the normalisation off by 7e-9) moves every fault by
	// nanoseconds and changes nothing else.
	tiny := DrawBoardSchedule(7, slots, 8, 2, 6*time.Hour, Hazard{LemonShare: 1e-9, LemonMultiple: 8})
	lemonless := DrawBoardSchedule(7, slots, 8, 2, 6*time.Hour, Hazard{})
	if diff := cmp.Diff(tiny, lemonless, cmp.Comparer(func(x, y time.Duration) bool { return (x - y).Abs() < time.Millisecond })); diff != "" {
		t.Fatalf("a negligible lemon share changed the faults (-tiny +none):\n%s", diff)
	}
}

// A lemon board gets about LemonMultiple times the faults of a normal
// one, and the fleet of fresh boards keeps the rate asked for.
func TestLemonsFailMoreAndRateIsKept(t *testing.T) {
	slots := fleet(4000)
	h := Hazard{LemonShare: 0.05, LemonMultiple: 8}
	const perMinute, hours = 4.0, 48
	faults := DrawBoardSchedule(3, slots, 8, perMinute, hours*time.Hour, h)
	lemon := map[string]bool{}
	var lemons int
	for _, b := range Boards(3, slots, 1, perMinute, h) {
		lemon[b.Slot] = b.Lemon
		if b.Lemon {
			lemons++
		}
	}
	var onLemons, onNormal, fresh float64
	for _, f := range faults {
		if f.Board != 0 {
			continue
		}
		fresh++
		if lemon[f.Slot] {
			onLemons++
		} else {
			onNormal++
		}
	}
	// 4000 boards at p = 0.05: 200 ± 14 lemons.
	if lemons < 150 || lemons > 250 {
		t.Fatalf("%d lemons among 4000 boards, want about 200", lemons)
	}
	ratio := (onLemons / float64(lemons)) / (onNormal / float64(len(slots)-lemons))
	// About 2,300 faults on lemons: the ratio's relative error is about 3 %.
	if math.Abs(ratio-8) > 0.8 {
		t.Errorf("a lemon got %.2f times the faults of a normal board, want about 8", ratio)
	}
	want := perMinute * hours * 60
	if math.Abs(fresh-want) > 4*math.Sqrt(want) {
		t.Errorf("%.0f faults on fresh boards, want %.0f ± %.0f", fresh, want, 4*math.Sqrt(want))
	}
}

// The covariates are normalised away exactly: fresh boards' rates sum to
// the fleet's rate; the zero Hazard is a homogeneous fleet.
func TestCovariatesKeepTheFleetRate(t *testing.T) {
	slots := fleet(37)
	h := Hazard{RackSize: 4, TopMultiple: 1.5, BusyShare: 0.75, BusyMultiple: 1.5}
	var sum float64
	var lo, hi = math.Inf(1), 0.0
	for _, b := range Boards(1, slots, 1, 3, h) {
		sum += b.PerMinute
		lo, hi = min(lo, b.Multiple), max(hi, b.Multiple)
	}
	if math.Abs(sum-3) > 1e-9 {
		t.Errorf("fresh boards sum to %v faults a minute, want 3", sum)
	}
	if r := hi / lo; math.Abs(r-2.25) > 1e-9 {
		t.Errorf("hottest busy over coolest idle = %v, want 1.5 × 1.5", r)
	}
	for _, b := range Boards(1, slots, 3, 3, Hazard{}) {
		if b.Multiple != 1 || b.Lemon {
			t.Fatalf("zero hazard gave board %+v", b)
		}
	}
	if !(Hazard{}).Off() || DefaultHazard().Off() || (Hazard{RackSize: 4, TopMultiple: 1}).Off() == false {
		t.Error("Off is wrong")
	}
}

func TestHazardValidate(t *testing.T) {
	for _, bad := range []Hazard{{LemonShare: -0.1}, {LemonShare: 1.1}, {LemonShare: 0.1}, {LemonShare: 0.1, LemonMultiple: 0.5},
		{RackSize: -1}, {TopMultiple: math.NaN()}, {BusyShare: 2}, {BusyMultiple: -1}} {
		if bad.Validate() == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	if err := DefaultHazard().Validate(); err != nil {
		t.Error(err)
	}
}

// A pinned fault keeps its board through a file, board 0 included; a
// line without a board (every file written before boards) is unpinned.
func TestScheduleFileBoards(t *testing.T) {
	in := []ScheduledFault{
		{At: time.Minute, Slot: "n-0", Class: "hbm3-dbe", GPU: 1},
		{At: 2 * time.Minute, Slot: "n-1", Class: "hbm3-dbe", Board: 0, Pinned: true},
		{At: 3 * time.Minute, Slot: "n-1", Class: "faulty-gpu", Board: 2, Pinned: true},
	}
	path := t.TempDir() + "/s.jsonl"
	if err := WriteSchedule(path, in); err != nil {
		t.Fatal(err)
	}
	back, err := LoadSchedule(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(in, back); diff != "" {
		t.Fatalf("round trip (-want +got):\n%s", diff)
	}
	old, err := ReadSchedule(strings.NewReader(`{"at":60000000000,"slot":"n-0","class":"faulty-gpu","gpu":3}`+"\n"), "old")
	if err != nil || len(old) != 1 || old[0].Pinned || !old[0].AppliesTo(0) || !old[0].AppliesTo(5) {
		t.Fatalf("an old line read as %+v, %v: want unpinned, for any board", old, err)
	}
	if in[2].AppliesTo(1) || !in[2].AppliesTo(2) {
		t.Error("a fault pinned to board 2 applies to the wrong board")
	}
	if _, err := ReadSchedule(strings.NewReader(`{"at":0,"slot":"n","class":"faulty-gpu","board":-1}`), "neg"); err == nil {
		t.Error("a negative board accepted")
	}
}

// The lineage counts boards per slot, across unseen predecessors.
func TestLineage(t *testing.T) {
	var l Lineage
	if s, b, ok := l.SlotBoard("n-7"); s != "n-7" || b != 0 || !ok {
		t.Fatalf("the slot's own name: %s %d %v, want board 0", s, b, ok)
	}
	if _, b, ok := l.SlotBoard("n-7-r000001"); ok || b != -1 {
		t.Fatalf("an unseen replacement: board %d known %v", b, ok)
	}
	steps := []struct {
		node, replaces string
		changed        bool
		board          int
	}{
		{"n-7", "", true, 0},
		{"n-7", "", false, 0},
		{"n-7-r000001", "n-7", true, 1},
		{"n-7-r000001", "n-7", false, 1},
		// n-7-r000002 was replaced before the fleet saw it.
		{"n-7-r000003", "n-7-r000002", true, 3},
		{"n-8-r00000a", "", true, 1},
	}
	for _, s := range steps {
		if got := l.Observe(s.node, s.replaces); got != s.changed {
			t.Errorf("Observe(%s) changed = %v, want %v", s.node, got, s.changed)
		}
		if _, b, ok := l.SlotBoard(s.node); b != s.board || !ok {
			t.Errorf("%s: board %d (known %v), want %d", s.node, b, ok, s.board)
		}
	}
	if _, b, _ := l.SlotBoard("n-7-r000002"); b != 2 {
		t.Errorf("the unseen predecessor got board %d, want 2", b)
	}
}
