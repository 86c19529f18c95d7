package jobmodel

import (
	"strings"
	"testing"
	"time"
)

// lemonFleet: every 20th slot's first board is a lemon failing 8 times as
// often, the rest at a rate that keeps the fleet's mean.
func lemonFleet(o *Options) BoardRate {
	base := o.FailuresPerNodeHour / (0.95 + 0.05*8)
	return func(slot, board int) (float64, bool) {
		if board == 0 && slot%20 == 0 {
			return base * 8, true
		}
		return base, false
	}
}

func small() Options {
	o := Defaults()
	o.Nodes, o.Days = 64, 20
	o.FailuresPerNodeHour *= 4 // enough faults in a short run
	return o
}

func run(t *testing.T, o Options, arm Arm) Result {
	t.Helper()
	r, err := Run(o, arm)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A run is a pure function of its options.
func TestRunIsDeterministic(t *testing.T) {
	o := small()
	o.Rate = lemonFleet(&o)
	a, b := run(t, o, Feedback), run(t, o, Feedback)
	if a.Faults != b.Faults || a.Interruptions != b.Interruptions || a.JobsOnTime != b.JobsOnTime || a.LostGPUHours() != b.LostGPUHours() {
		t.Fatalf("two runs differ: %+v vs %+v", a, b)
	}
}

// Common random numbers: an arm that never replaces a board sees every
// fault of the first boards that falls while the node is up; the first
// fault of every slot comes at the same time in each arm, whatever the
// arm does afterwards, so the arms' fault counts differ only by what
// their repairs changed.
func TestArmsShareTheFirstFaults(t *testing.T) {
	o := small()
	o.Rate = lemonFleet(&o)
	s1, s2 := &sim{o: &o, arm: Manual}, &sim{o: &o, arm: Feedback}
	for slot := range 10 {
		a, b := &node{slot: slot}, &node{slot: slot}
		s1.install(a, 0, 0)
		s2.install(b, 0, 0)
		if len(a.faults) != len(b.faults) || len(a.faults) > 0 && a.faults[0] != b.faults[0] {
			t.Fatalf("slot %d: board 0's faults differ between arms", slot)
		}
		// A later board has its own faults, not the old one's.
		s1.install(a, 1, 0)
		if len(a.faults) > 0 && len(b.faults) > 0 && a.faults[0] == b.faults[0] {
			t.Errorf("slot %d: board 1 drew board 0's faults", slot)
		}
	}
}

// What each arm does to a broken node: the operator replaces after the
// delay; gpuheal reboots within two minutes; only the feedback loop
// retires lemons, and only when lemons there are.
func TestArms(t *testing.T) {
	o := small()
	o.Rate = lemonFleet(&o)
	manual, plain, loop := run(t, o, Manual), run(t, o, NoFeedback), run(t, o, Feedback)
	if manual.Reboots != 0 || manual.Replacements == 0 || manual.MeanTimeToRecover() != o.OperatorDelay+o.Replace {
		t.Errorf("manual: %d reboots, %d replacements, MTTR %s", manual.Reboots, manual.Replacements, manual.MeanTimeToRecover())
	}
	if plain.MeanTimeToRecover() > 3*time.Minute || plain.LemonsRetired != 0 || plain.Reboots == 0 {
		t.Errorf("gpuheal: MTTR %s, %d lemons retired, %d reboots", plain.MeanTimeToRecover(), plain.LemonsRetired, plain.Reboots)
	}
	if loop.LemonsRetired == 0 {
		t.Errorf("gpuheal with the loop retired no lemon among %d lemon boards", loop.LemonBoards)
	}
	for _, r := range []Result{manual, plain, loop} {
		if r.JobsFinished == 0 || r.Interruptions == 0 || r.FailureRate() <= 0 || r.SLA() <= 0 || r.SLA() > 1 {
			t.Errorf("%s: %d jobs finished, %d interruptions, rate %.3f, SLA %.3f", r.Arm, r.JobsFinished, r.Interruptions, r.FailureRate(), r.SLA())
		}
	}
	// Minutes instead of a quarter of an hour per fault: less time down,
	// though not necessarily less work lost (TestLemonsCostARebootingFleet).
	if plain.DownGPUHours() >= manual.DownGPUHours() {
		t.Errorf("gpuheal's nodes were down %.0f GPU-hours, the operator's %.0f", plain.DownGPUHours(), manual.DownGPUHours())
	}
}

// A fleet that reboots keeps its lemons, which go on failing: with lemons
// behind a third of the faults, rebooting at once sees more faults than
// an operator who replaces every broken node a quarter of an hour later,
// and the lemon rule wins some of them back.
func TestLemonsCostARebootingFleet(t *testing.T) {
	o := small()
	o.Rate = lemonFleet(&o)
	manual, plain, loop := run(t, o, Manual), run(t, o, NoFeedback), run(t, o, Feedback)
	if plain.Faults <= manual.Faults {
		t.Errorf("rebooting saw %d faults, replacing %d", plain.Faults, manual.Faults)
	}
	if loop.Faults >= plain.Faults {
		t.Errorf("with the lemon rule %d faults, without %d", loop.Faults, plain.Faults)
	}
}

// Without faults nothing is lost, every job is on time.
func TestNoFaults(t *testing.T) {
	o := small()
	o.FailuresPerNodeHour = 0
	for _, arm := range Arms {
		r := run(t, o, arm)
		if r.Faults != 0 || r.Interruptions != 0 || r.LostGPUHours() != 0 || r.SLA() != 1 || r.JobsFinished == 0 {
			t.Errorf("%s without faults: %+v", arm, r)
		}
	}
}

func TestValidateNamesTheField(t *testing.T) {
	o := Defaults()
	o.Jobs.Sizes = []int{1, 1000}
	o.Jobs.Checkpoint = 0
	err := o.Validate()
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{"job size 1000", "checkpoint every 0s"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%v lacks %q", err, want)
		}
	}
}
