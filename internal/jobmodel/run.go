package jobmodel

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/gpuheal/gpuheal/internal/score"
)

// step is the model's clock tick: repair times and the operator's delay
// are whole minutes.
const step = time.Minute

type nodeState int

const (
	up nodeState = iota
	broken
	repairing
)

type node struct {
	slot, board int
	name        string // changes with the board, as a replacement joins under a new name
	faults      []time.Duration
	next        int
	state       nodeState
	brokenAt    time.Duration
	noticedAt   time.Duration // when the repair starts (manual: the operator; gpuheal: the cordon)
	doneAt      time.Duration
	replacing   bool
	job         *job
	reboots     []time.Duration // this name's reboots, for the escalation
	events      []score.Event   // this name's incidents, for the score
}

// schedulable: a scheduler can give it work. A node broken without anyone
// noticing still can (the manual arm); a cordoned one cannot.
func (n *node) schedulable(t time.Duration) bool {
	return n.job == nil && (n.state == up || n.state == broken && t < n.noticedAt)
}

type job struct {
	id, size                int
	critical                bool
	length, progress, saved time.Duration
	started                 bool
	start, deadline         time.Duration
	hang, restart           time.Duration // left
	nodes                   []*node
	interruptions           int
}

type sim struct {
	o                *Options
	arm              Arm
	epoch            time.Time
	nodes            []*node
	jobs             []*job // queued or running
	nextJob          int
	jobRNG, placeRNG *rand.Rand
	scorer           *score.Scorer
	history          []score.Incident
	res              Result
}

// Run runs one arm.
func Run(o Options, arm Arm) (Result, error) {
	if err := o.Validate(); err != nil {
		return Result{}, err
	}
	sc, err := score.New(score.DefaultConfig())
	if err != nil {
		return Result{}, err
	}
	s := &sim{o: &o, arm: arm, epoch: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), scorer: sc,
		jobRNG:   rand.New(rand.NewPCG(uint64(o.Seed), 0x10b5)),                   //nolint:gosec // a reproducible simulation
		placeRNG: rand.New(rand.NewPCG(uint64(o.Seed), 0x91ace+uint64(len(arm)))), //nolint:gosec // a reproducible simulation
	}
	s.res.Arm = arm
	for i := range o.Nodes {
		n := &node{slot: i}
		s.install(n, 0, 0)
		s.nodes = append(s.nodes, n)
	}
	end := time.Duration(o.Days * 24 * float64(time.Hour))
	for t := time.Duration(0); t < end; t += step {
		s.faults(t)
		s.repairs(t)
		s.work(t)
		s.submit()
		s.place(t)
	}
	s.finish(end)
	return s.res, nil
}

// install puts board b in n's slot at t: its faults are the board's own
// Poisson process over the whole run, of which only those after t count.
func (s *sim) install(n *node, b int, t time.Duration) {
	n.board, n.name = b, fmt.Sprintf("node-%04d-b%d", n.slot, b)
	rate, lemon := s.o.FailuresPerNodeHour, false
	if s.o.Rate != nil {
		rate, lemon = s.o.Rate(n.slot, b)
	}
	if lemon {
		s.res.LemonBoards++
	}
	rng := rand.New(rand.NewPCG(uint64(s.o.Seed)^0x6f1ee7, uint64(n.slot)<<20|uint64(b))) //nolint:gosec // a reproducible simulation
	n.faults, n.next = n.faults[:0], 0
	if rate > 0 {
		end := time.Duration(s.o.Days * 24 * float64(time.Hour))
		for at := time.Duration(0); ; {
			at += time.Duration(rng.ExpFloat64() / rate * float64(time.Hour))
			if at >= end {
				break
			}
			if at > t {
				n.faults = append(n.faults, at)
			}
		}
	}
	n.state, n.reboots, n.events = up, nil, nil
}

// faults breaks the nodes whose board's next fault has come. A fault
// while the node is already broken or in repair is lost in it.
func (s *sim) faults(t time.Duration) {
	for _, n := range s.nodes {
		hit := false
		for n.next < len(n.faults) && n.faults[n.next] <= t {
			n.next++
			hit = true
		}
		if !hit || n.state != up {
			continue
		}
		s.res.Faults++
		n.state, n.brokenAt = broken, t
		if s.arm == Manual {
			n.noticedAt = t + s.o.OperatorDelay
		} else {
			n.noticedAt = t + s.o.Detect
		}
		if j := n.job; j != nil {
			s.interrupt(j)
		}
	}
}

// interrupt: one node of j broke. The work since the last checkpoint is
// lost; the job hangs until its collective times out (or, under gpuheal,
// until the node is cordoned and its pod evicted), then restarts.
func (s *sim) interrupt(j *job) {
	if j.hang > 0 {
		return // already going down
	}
	j.interruptions++
	s.res.Interruptions++
	s.res.LostWorkGPUHours += gpuHours(j.progress-j.saved, j.size)
	j.progress = j.saved
	j.restart = 0
	j.hang = s.o.Jobs.Hang
	if s.arm != Manual {
		j.hang = s.o.Detect
	}
}

// repairs moves broken nodes through their repair.
func (s *sim) repairs(t time.Duration) {
	for _, n := range s.nodes {
		switch {
		case n.state == broken && t >= n.noticedAt:
			// The cordon (or the operator) evicts what runs there.
			if j := n.job; j != nil {
				j.hang = 0
				s.release(j)
			}
			s.decide(n, t)
		case n.state == repairing && t >= n.doneAt:
			s.res.Outages = append(s.res.Outages, t-n.brokenAt)
			if n.replacing {
				s.install(n, n.board+1, t)
			}
			n.state = up
		}
	}
}

// decide is the repair: the operator replaces; gpuheal reboots, replaces
// after RebootsBeforeReplace reboots of the node within a day, and with
// the feedback loop replaces a lemon.
func (s *sim) decide(n *node, t time.Duration) {
	n.state, n.replacing = repairing, s.arm == Manual
	now := s.epoch.Add(t)
	class := score.ClassReboot
	if s.arm != Manual {
		recent := 0
		for _, r := range n.reboots {
			if t-r < 24*time.Hour {
				recent++
			}
		}
		if recent >= s.o.RebootsBeforeReplace {
			n.replacing = true
		}
		inc := score.Incident{ID: fmt.Sprintf("i%d", len(s.history)), Time: now, Machine: n.name, Node: n.name, Class: class}
		if s.arm == Feedback && !n.replacing && s.o.Lemon.Incidents > 0 {
			if _, lemon := s.o.Lemon.Check(s.history, inc); lemon {
				n.replacing = true
				s.res.LemonsRetired++
			}
		}
		if n.replacing {
			inc.Class = score.ClassReplace
		}
		s.history = append(s.history, inc)
	}
	if n.replacing {
		s.res.Replacements++
		n.doneAt = t + s.o.Replace
		return
	}
	s.res.Reboots++
	n.reboots = append(n.reboots, t)
	n.events = append(n.events, score.Event{Time: now, Class: class})
	n.doneAt = t + s.o.Reboot
}

// work moves every running job on by a step.
func (s *sim) work(t time.Duration) {
	keep := s.jobs[:0]
	for _, j := range s.jobs {
		if !j.placed() {
			keep = append(keep, j)
			continue
		}
		held := gpuHours(step, j.size)
		s.res.JobGPUHours += held
		switch {
		case j.hang > 0:
			s.res.IdleGPUHours += held
			if j.hang -= step; j.hang <= 0 {
				j.hang = 0
				s.release(j)
			}
		case j.restart > 0:
			s.res.IdleGPUHours += held
			j.restart -= step
		default:
			j.progress += step
			if j.progress-j.saved >= s.o.Jobs.Checkpoint {
				j.saved = j.progress
			}
		}
		if j.progress >= j.length {
			s.res.JobsFinished++
			if t+step <= j.deadline {
				s.res.JobsOnTime++
			}
			s.release(j)
			continue
		}
		keep = append(keep, j)
	}
	s.jobs = keep
}

func (j *job) placed() bool { return len(j.nodes) > 0 }

// release frees j's nodes; a broken one goes to its repair.
func (s *sim) release(j *job) {
	for _, n := range j.nodes {
		n.job = nil
	}
	j.nodes = nil
}

// submit keeps the queue and the running jobs at the utilisation asked.
func (s *sim) submit() {
	demand := 0
	for _, j := range s.jobs {
		demand += j.size
	}
	m := s.o.Jobs
	for float64(demand) < m.Utilisation*float64(s.o.Nodes) {
		j := &job{id: s.nextJob, size: m.Sizes[s.jobRNG.IntN(len(m.Sizes))], critical: s.jobRNG.Float64() < m.CriticalShare,
			length: m.MinLength + time.Duration(s.jobRNG.Int64N(int64(m.MaxLength-m.MinLength)+1))}
		j.length = j.length.Round(step)
		s.nextJob++
		s.jobs = append(s.jobs, j)
		demand += j.size
	}
}

// place gives queued jobs nodes, oldest first, any that fit (backfill).
// Without the feedback loop the scheduler has no reason to prefer one
// node over another; with it, gold before silver before bronze (the
// PreferNoSchedule taint and the preferred affinity), and critical jobs
// on gold or silver only.
func (s *sim) place(t time.Duration) {
	var free []*node
	for _, n := range s.nodes {
		if n.schedulable(t) {
			free = append(free, n)
		}
	}
	if len(free) == 0 {
		return
	}
	s.placeRNG.Shuffle(len(free), func(a, b int) { free[a], free[b] = free[b], free[a] })
	var tier map[*node]score.Tier
	if s.arm == Feedback {
		tier = make(map[*node]score.Tier, len(free))
		now := s.epoch.Add(t)
		for _, n := range free {
			tier[n] = s.scorer.Tier(s.scorer.Score(score.Input{Events: n.events}, now).Score)
		}
		rank := map[score.Tier]int{score.Gold: 0, score.Silver: 1, score.Bronze: 2}
		slices.SortStableFunc(free, func(a, b *node) int { return rank[tier[a]] - rank[tier[b]] })
	}
	for _, j := range s.jobs {
		if j.placed() {
			continue
		}
		var pick []*node
		for _, n := range free {
			if n.job != nil || j.critical && tier != nil && tier[n] == score.Bronze {
				continue
			}
			pick = append(pick, n)
			if len(pick) == j.size {
				break
			}
		}
		if len(pick) < j.size {
			continue
		}
		j.nodes = pick
		for _, n := range pick {
			n.job = j
		}
		if !j.started {
			j.started, j.start = true, t
			j.deadline = t + time.Duration(float64(j.length)*(1+s.o.Jobs.Slack))
		} else {
			j.restart = s.o.Jobs.Restart
		}
		// A node that broke unnoticed takes the job down at once.
		for _, n := range pick {
			if n.state == broken {
				s.interrupt(j)
				break
			}
		}
	}
}

// finish counts the jobs that missed their deadline without finishing.
func (s *sim) finish(end time.Duration) {
	for _, j := range s.jobs {
		if j.started && j.deadline < end {
			s.res.JobsLate++
		}
	}
	s.res.Days = s.o.Days
	s.res.Nodes = s.o.Nodes
}

func gpuHours(d time.Duration, nodes int) float64 { return d.Hours() * float64(nodes) * 8 }
