package simfleet

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/gpuheal/gpuheal/internal/gpu/sim"
	"github.com/gpuheal/gpuheal/internal/simfleet/schedule"
)

// scheduleTimer fires when the next scheduled fault is due (nil: none).
func (f *simFleet) scheduleTimer() (<-chan time.Time, func()) {
	if f.next >= len(f.schedule) {
		return nil, func() {}
	}
	t := time.NewTimer(time.Until(f.epoch.Add(f.schedule[f.next].At)))
	return t.C, func() { t.Stop() }
}

// loadSchedule reads the schedule and the journal of a previous run of
// the fleet, so that a restart injects nothing twice.
func (f *simFleet) loadSchedule() error {
	if f.epoch.IsZero() {
		f.epoch = time.Now()
	}
	f.loadLineage()
	if f.opts.ScheduleFile == "" {
		return nil
	}
	sched, err := schedule.LoadSchedule(f.opts.ScheduleFile)
	if err != nil {
		return fmt.Errorf("--sim-fleet-schedule: %w", err)
	}
	f.schedule = sched
	done, err := schedule.ReadInjections(f.dir)
	if err != nil {
		f.log.Warn("sim fleet: the injection journal ends in a bad line; going on after the good ones", "err", err)
	}
	for _, in := range done {
		f.next = max(f.next, in.Index+1)
	}
	return nil
}

// injectDue injects every scheduled fault whose time has come into the
// node now in its slot, if the fault is for that node's board, or
// journals why not.
func (f *simFleet) injectDue(now time.Time) {
	for f.next < len(f.schedule) && !f.epoch.Add(f.schedule[f.next].At).After(now) {
		e := f.schedule[f.next]
		f.injectScheduled(f.next, e)
		f.next++
	}
}

func (f *simFleet) injectScheduled(index int, e schedule.ScheduledFault) {
	class, _ := schedule.ClassNamed(e.Class)
	f.mu.Lock()
	defer f.mu.Unlock()
	var a *simAgent
	for name, cand := range f.agents {
		if schedule.SlotOf(name) == e.Slot {
			a = cand
		}
	}
	in := schedule.Injection{Index: index, Time: time.Now(), Slot: e.Slot, Class: e.Class, Kind: class.Fault.Kind, GPU: e.GPU, Board: e.Board, Fatal: class.Fatal}
	board, known := -1, false
	if a != nil {
		_, board, known = f.lineage.SlotBoard(a.name)
		if !e.Pinned {
			in.Board = board
		}
	}
	switch {
	case a == nil:
		in.Skipped = "no machine up in the slot (rebooting, booting or gone)"
	case e.Pinned && !known:
		in.Node = a.name
		in.Skipped = fmt.Sprintf("the fault is for board %d of the slot; which board node %s is, is unknown", e.Board, a.name)
	case !e.AppliesTo(board):
		// Another machine's fault: one already replaced, or one not yet
		// installed. It is journaled, so the soak can tell it from one lost.
		in.Node = a.name
		in.Skipped = fmt.Sprintf("the fault is for board %d of the slot; board %d is in place", e.Board, board)
	case class.Fatal && a.faulted():
		in.Node = a.name
		in.Skipped = "the machine already has a fatal fault in this boot"
	default:
		f.injectLocked(a, class, e.GPU, in)
		return
	}
	f.journal(in)
	f.log.Info("sim fleet: scheduled fault skipped", "slot", e.Slot, "class", e.Class, "why", in.Skipped)
}

// injectOne puts a fault drawn from the failure mix on a random node that
// has none yet.
func (f *simFleet) injectOne() {
	f.mu.Lock()
	defer f.mu.Unlock()
	var healthy []string
	for name, a := range f.agents {
		if !a.faulted() {
			healthy = append(healthy, name)
		}
	}
	if len(healthy) == 0 {
		return
	}
	slices.Sort(healthy)
	name := healthy[f.rng.IntN(len(healthy))]
	class := schedule.Draw(f.rng)
	gpu := f.rng.IntN(max(f.agent.Sim.GPUs, 1))
	f.injectLocked(f.agents[name], class, gpu, schedule.Injection{Index: schedule.IndexDrawn, Time: time.Now(), Slot: schedule.SlotOf(name), Class: class.Name})
}

// injectLocked puts the fault on the agent's GPUs, keeps it on disk for a
// restarted fleet, and journals it. f.mu is held.
func (f *simFleet) injectLocked(a *simAgent, class schedule.FaultClass, gpu int, in schedule.Injection) {
	fault := class.Fault
	fault.GPU = gpu
	fault, fatal := a.onFabric(fault, class.Fatal, f.agent.Sim.GPUs)
	if fault.Kind == sim.KindLatent && f.opts.LatentSurfaceAfter > 0 {
		fault.Params = maps.Clone(fault.Params)
		fault.Params["surface-after"] = f.opts.LatentSurfaceAfter.String()
	}
	in.Node, in.Kind, in.GPU, in.Fatal = a.name, fault.Kind, gpu, fatal
	if err := a.node.Inject(fault); err != nil {
		in.Skipped = "the simulator refused it: " + err.Error()
		f.journal(in)
		f.log.Error("sim fleet: injecting fault", "node", a.name, "class", class.Name, "err", err)
		return
	}
	var err error
	if sim.OutlivesReboot(fault.Kind) {
		// The board's or the cable's, not the boot's: a reboot keeps it.
		a.board.Faults = append(a.board.Faults, fault)
		a.board.Faulted = a.board.Faulted || fatal
		err = f.saveBoard(a.name, a.board)
	} else {
		a.hardware.Faults = append(a.hardware.Faults, fault)
		a.hardware.Faulted = a.hardware.Faulted || fatal
		err = f.saveFaults(a.name, a.hardware)
	}
	if err != nil {
		f.log.Error("sim fleet: keeping the fault on disk", "node", a.name, "err", err)
	}
	f.journal(in)
	f.injected.WithLabelValues(class.Name).Inc()
	f.log.Info("sim fleet: fault injected", "node", a.name, "gpu", gpu, "class", class.Name, "fault", fault.Kind, "fatal", fatal)
}
