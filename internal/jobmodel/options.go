// Package jobmodel runs a GPU fleet's month of training jobs at real
// failure rates under three ways of repairing it — a manual operator,
// gpuheal without its feedback loop, gpuheal with it — and measures what
// jobs see: interruptions per 1,000 GPU-hours, jobs finished by their
// deadline, GPU-hours of lost work, the time to recover.
//
// The live soak (internal/soak) runs the real control plane, but a month
// of fleet life at real rates cannot run live: the soak compresses the
// fault rate a thousandfold and so cannot say what a training job of a
// day sees. This model takes what the soak measures (repair times) and
// the controller's own rules — the lemon rule and the health score's
// tiers (internal/score) — and steps a fleet minute by minute. Every
// figure it assumes is an Options field with its source or the word
// "assumption" in docs/reliability.md.
//
// All three arms see the same faults: each board's faults are a Poisson
// process over the whole month drawn from its own random stream (common
// random numbers), so an arm that replaces a board earlier sees the next
// board's faults, not a different draw of the old one's.
package jobmodel

import (
	"errors"
	"fmt"
	"time"

	"github.com/gpuheal/gpuheal/internal/score"
)

// Arm is who repairs the fleet.
type Arm string

const (
	// Manual is the operator's arm: an operator notices a broken node OperatorDelay after it
	// broke and has it replaced; meanwhile it stays schedulable.
	Manual Arm = "manual"
	// NoFeedback is gpuheal's arm without the loop: it cordons at once and reboots (escalating to a
	// replacement after RebootsBeforeReplace reboots in a day); jobs are
	// placed without regard to health.
	NoFeedback Arm = "gpuheal"
	// Feedback is gpuheal with the lemon rule, and jobs placed by the
	// health score's tiers (critical jobs on gold or silver only, others
	// preferring the healthier nodes, bronze last).
	Feedback Arm = "gpuheal+feedback"
)

// Arms are the three, in the table's order.
var Arms = []Arm{Manual, NoFeedback, Feedback}

// BoardRate gives a slot's board its failure rate (per hour) and whether
// it is a lemon; board 0 is the slot's first machine, k its k-th
// replacement.
type BoardRate func(slot, board int) (perHour float64, lemon bool)

// Options of one run.
type Options struct {
	Nodes int
	Days  float64
	Seed  int64
	// Rate gives every board its rate; nil is a homogeneous fleet at
	// FailuresPerNodeHour.
	Rate                BoardRate
	FailuresPerNodeHour float64

	// Repair times.
	OperatorDelay        time.Duration // manual: broken to noticed
	Detect               time.Duration // gpuheal: broken to cordoned
	Reboot               time.Duration // cordoned to back in service after a reboot
	Replace              time.Duration // a replacement's boot and join
	RebootsBeforeReplace int           // gpuheal's escalation within a day
	Lemon                score.LemonRule

	Jobs JobMix
}

// JobMix says what work the fleet runs.
type JobMix struct {
	// Sizes in nodes, drawn uniformly; a job is a gang: one broken node
	// interrupts all of it.
	Sizes []int
	// MinLength and MaxLength bound a job's work, drawn uniformly.
	MinLength, MaxLength time.Duration
	// Checkpoint: a job saves its state this often; an interruption loses
	// the work since the last one.
	Checkpoint time.Duration
	// Restart is what a restart costs before work goes on (loading the
	// checkpoint, initialising the collectives).
	Restart time.Duration
	// Hang: on a node that broke without being taken away, the job hangs
	// this long before its collective times out and it restarts.
	Hang time.Duration
	// Slack: the deadline is the job's length times 1+Slack after it
	// first starts.
	Slack float64
	// Utilisation the scheduler keeps the fleet at with queued jobs.
	Utilisation float64
	// CriticalShare of the jobs may run only on gold or silver nodes
	// (Feedback arm); the others prefer the healthier nodes.
	CriticalShare float64
}

// Defaults is a 256-node fleet for 30 days. docs/reliability.md gives the
// source of each figure or calls it an assumption.
func Defaults() Options {
	return Options{
		Nodes: 256, Days: 30, Seed: 1,
		// Meta's research clusters: a projected mean time to failure of
		// 47 days for an 8-GPU node (Kokolis et al., HPCA 2025).
		FailuresPerNodeHour:  1 / (47 * 24.0),
		OperatorDelay:        15 * time.Minute,
		Detect:               time.Minute,
		Reboot:               time.Minute,
		Replace:              10 * time.Minute,
		RebootsBeforeReplace: 2,
		Lemon:                score.DefaultLemonRule(),
		Jobs: JobMix{
			Sizes:     []int{1, 2, 4, 8, 16},
			MinLength: 6 * time.Hour, MaxLength: 48 * time.Hour,
			Checkpoint: time.Hour, Restart: 15 * time.Minute, Hang: 10 * time.Minute,
			Slack: 0.05, Utilisation: 0.75, CriticalShare: 0.25,
		},
	}
}

// Validate names the first bad field.
func (o *Options) Validate() error {
	var errs []error
	if o.Nodes < 1 {
		errs = append(errs, fmt.Errorf("nodes %d: want at least 1", o.Nodes))
	}
	if !(o.Days > 0 && o.Days <= 366) {
		errs = append(errs, fmt.Errorf("days %v: want more than 0, at most 366", o.Days))
	}
	if o.Rate == nil && !(o.FailuresPerNodeHour >= 0) {
		errs = append(errs, fmt.Errorf("failures per node-hour %v: must not be negative", o.FailuresPerNodeHour))
	}
	if len(o.Jobs.Sizes) == 0 {
		errs = append(errs, errors.New("jobs: no sizes"))
	}
	for _, s := range o.Jobs.Sizes {
		if s < 1 || s > o.Nodes {
			errs = append(errs, fmt.Errorf("job size %d: want 1 to the fleet's %d nodes", s, o.Nodes))
		}
	}
	if o.Jobs.MinLength <= 0 || o.Jobs.MaxLength < o.Jobs.MinLength {
		errs = append(errs, fmt.Errorf("job length %s to %s: want 0 < min ≤ max", o.Jobs.MinLength, o.Jobs.MaxLength))
	}
	if o.Jobs.Checkpoint <= 0 {
		errs = append(errs, fmt.Errorf("checkpoint every %s: must be positive", o.Jobs.Checkpoint))
	}
	if !(o.Jobs.Utilisation > 0 && o.Jobs.Utilisation <= 1) {
		errs = append(errs, fmt.Errorf("utilisation %v: want more than 0, at most 1", o.Jobs.Utilisation))
	}
	if !(o.Jobs.CriticalShare >= 0 && o.Jobs.CriticalShare <= 1) {
		errs = append(errs, fmt.Errorf("critical share %v: want 0 to 1", o.Jobs.CriticalShare))
	}
	if o.Lemon.Incidents != 0 {
		if err := o.Lemon.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("lemon rule: %w", err))
		}
	}
	return errors.Join(errs...)
}
