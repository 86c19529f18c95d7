package schedule

import (
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"
)

// The draws from the mix repeat for a seed and cover it.
func TestDrawRepeatsForASeed(t *testing.T) {
	draw := func(seed int64) []string {
		rng := rand.New(rand.NewPCG(uint64(seed), 1)) //nolint:gosec // test
		var got []string
		for range 50 {
			got = append(got, Draw(rng).Name)
		}
		return got
	}
	a, b := draw(7), draw(7)
	if strings.Join(a, ",") != strings.Join(b, ",") {
		t.Fatal("the same seed drew different faults")
	}
	seen := map[string]bool{}
	for _, name := range a {
		seen[name] = true
	}
	if !seen["faulty-gpu"] || len(seen) < 4 {
		t.Fatalf("50 draws from the mix gave only %v", seen)
	}
}

// A schedule is drawn the same for a seed, stored and read back; a bad
// line is an error naming it; a slot is a node without its replacement
// suffix; the journal reads back what was appended.
func TestSchedule(t *testing.T) {
	slots := []string{"n-0", "n-1"}
	a := DrawSchedule(5, slots, 8, 6, 10*time.Minute)
	b := DrawSchedule(5, slots, 8, 6, 10*time.Minute)
	if len(a) < 30 || len(a) != len(b) || a[7] != b[7] {
		t.Fatalf("draws differ or are too few: %d vs %d", len(a), len(b))
	}
	if SlotOf("gpu-node-0007-r1a2b3c") != "gpu-node-0007" || SlotOf("gpu-node-0007") != "gpu-node-0007" {
		t.Fatal("SlotOf does not strip the replacement suffix")
	}
	dir := t.TempDir()
	path := dir + "/schedule.jsonl"
	sched := []ScheduledFault{
		{At: 0, Slot: "n-0", Class: "hbm3-dbe", GPU: 1},
		{At: 0, Slot: "n-9", Class: "faulty-gpu", GPU: 2},
		{At: time.Hour, Slot: "n-0", Class: "gsp-timeout", GPU: 0},
	}
	if err := WriteSchedule(path, sched); err != nil {
		t.Fatal(err)
	}
	back, err := LoadSchedule(path)
	if err != nil || len(back) != 3 || back[2] != sched[2] {
		t.Fatalf("read back %+v, %v", back, err)
	}
	in := Injection{Index: 0, Slot: "n-0", Node: "n-0-r00beef", Class: "hbm3-dbe", Fatal: true}
	if err := AppendInjection(dir, in); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadInjections(dir); err != nil || len(got) != 1 || got[0].Node != in.Node {
		t.Fatalf("journal %+v, %v", got, err)
	}
	if err := os.WriteFile(path, []byte(`{"at":0,"slot":"n-0","class":"hbm3-dbe"}`+"\n"+`{"at":1,"slot":"n-0","class":"meteor"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadSchedule(path); err == nil || !strings.Contains(err.Error(), "schedule.jsonl:2") {
		t.Errorf("a bad class on line 2 gave %v", err)
	}
}

// The latent classes are for schedules only: the mix never draws them, a
// schedule names them, and their faults are valid.
func TestPlantedClassesAreNeverDrawn(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 1)) //nolint:gosec // test
	for range 5000 {
		if c := Draw(rng); strings.HasPrefix(c.Name, "latent-") {
			t.Fatalf("the mix drew %s", c.Name)
		}
	}
	for _, name := range []string{"latent-nccl-bandwidth", "latent-dcgm-memory", "latent-dcgm-diagnostic"} {
		c, ok := ClassNamed(name)
		if !ok || c.Fatal {
			t.Fatalf("class %s: found %v, fatal %v", name, ok, c.Fatal)
		}
		if err := c.Fault.Validate(); err != nil {
			t.Fatalf("class %s: %v", name, err)
		}
	}
}
