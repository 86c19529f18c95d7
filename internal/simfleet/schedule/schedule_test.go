package schedule

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gpuheal/gpuheal/internal/gpu/sim"
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

// The mix holds the paper's counts: 358 of its 419 interruptions, the
// network lines with their published 35 (8.4 %) and 7 (1.7 %), the faulty
// GPU's 148 split between the bus and NVLink; every class's fault is
// valid, and draws follow the weights.
func TestMixCounts(t *testing.T) {
	weights := map[string]float64{}
	var total float64
	for _, c := range mix {
		if err := c.Fault.Validate(); err != nil {
			t.Errorf("class %s: %v", c.Name, err)
		}
		weights[c.Name] = c.Weight
		total += c.Weight
	}
	network := weights["network-switch-cable-flap"] + weights["network-switch-cable-down"]
	if total != 358 || network != 35 || weights["nic"] != 7 || weights["faulty-gpu"]+weights["nvlink-down"] != 148 {
		t.Errorf("total %v, network switch/cable %v, NIC %v, faulty GPU %v", total, network, weights["nic"], weights["faulty-gpu"]+weights["nvlink-down"])
	}
	if got := fmt.Sprintf("%.1f %% %.1f %%", 100*network/419, 100*weights["nic"]/419); got != "8.4 % 1.7 %" {
		t.Errorf("shares of the paper's 419: %s", got)
	}
	for name, kind := range map[string]sim.Kind{
		"network-switch-cable-flap": sim.KindFabricLinkFlap,
		"network-switch-cable-down": sim.KindFabricPortDown,
		"nic":                       sim.KindFabricDeviceMissing,
	} {
		if c, ok := ClassNamed(name); !ok || !c.Fatal || c.Fault.Kind != kind {
			t.Errorf("class %s: found %v, %+v", name, ok, c)
		}
	}
	rng := rand.New(rand.NewPCG(11, 1)) //nolint:gosec // test
	drawn := map[string]int{}
	const n = 35800
	for range n {
		drawn[Draw(rng).Name]++
	}
	for name, w := range weights {
		want := n * w / total
		if got := float64(drawn[name]); got < want*0.85 || got > want*1.15 {
			t.Errorf("class %s drawn %v times in %d, want about %v", name, got, n, want)
		}
	}
}
