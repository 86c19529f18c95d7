// Package soak runs simulated fleet life — the real control plane, kwok
// nodes, workloads with PodDisruptionBudgets, the sim fleet with faults
// from the published failure mix, the controller — for a while, optionally
// under chaos (controller kills and leader changes, agent restarts, API
// server outages, provider failures, a full audit disk, garbage kernel-log
// lines), then checks the invariants gpuheal promises. See
// docs/reliability.md.
package soak

import (
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/gpuheal/gpuheal/internal/simfleet/schedule"
)

// Mode says who repairs the fleet.
type Mode string

const (
	// Live runs gpuheal-controller, two replicas with leader election.
	Live Mode = "live"
	// Manual runs no controller; a simulated operator replaces a node
	// OperatorDelay after its GPU condition turned False, the practice the
	// seed article measured (14–15 minutes).
	Manual Mode = "manual"
)

// Options of one soak run.
type Options struct {
	Nodes    int
	Duration time.Duration
	// Speed compresses time: fault rate up, boot and hold times down, and
	// the operator's 15 minutes with them. Reported times are scaled back
	// to real time.
	Speed float64
	Seed  int64
	Mode  Mode
	Chaos bool
	// Gate puts the health gate (testenv.HealthGate) in the policy.
	Gate bool
	// RebootNotReset maps the agent's advice reset-gpu to a reboot, as
	// before gpuheal reset single GPUs (the baseline of --reset-compare).
	RebootNotReset bool
	// Inference runs a service of one-GPU pods on every other node the
	// training jobs leave free, so that a partial drain has pods to leave
	// alone.
	Inference bool
	// LatentShare of the GPUs that fall off the bus carry a latent NCCL
	// fault too, which a reboot keeps and only the gate's check finds.
	LatentShare float64
	// FaultsPerMinute over the fleet at speed 1; 0 means one per 100 nodes.
	FaultsPerMinute float64
	// Hazard makes the fleet's boards differ (lemons, slot covariates):
	// the schedule is drawn per board (schedule.DrawBoardSchedule). The
	// zero Hazard is today's homogeneous fleet, drawn as before
	// (schedule.DrawSchedule), for a sensitivity run.
	Hazard schedule.Hazard
	// NoFeedback runs gpuheal without its feedback loop: no lemon rule,
	// no PreferNoSchedule taint on bronze nodes, training jobs without
	// the tier affinity (the middle arm of --compare).
	NoFeedback bool
	// ChaosEvery is the mean time between chaos actions (real time; an
	// action waits between half and one and a half of it); 0 means 40s.
	ChaosEvery time.Duration
	// OperatorDelay is the manual operator's reaction time at speed 1.
	OperatorDelay time.Duration
	// Quiesce bounds the wait, after the last fault, for every incident
	// to end; 0 means 3 minutes plus 5 at speed 1.
	Quiesce time.Duration

	// BinDir holds the control plane; OwnBinDir gpuheal-agent and
	// gpuheal-controller (default BinDir).
	BinDir, OwnBinDir string
	// WorkDir keeps logs, the audit log and the journals; "" is a
	// temporary directory removed at the end.
	WorkDir string
	Out     io.Writer
	Log     *slog.Logger
}

// Validate names the first bad option.
func (o *Options) Validate() error {
	switch {
	case o.Nodes < 8 || o.Nodes > 2000:
		return fmt.Errorf("--nodes %d: want 8 to 2000", o.Nodes)
	case o.Duration < 30*time.Second:
		return fmt.Errorf("--duration %s: want at least 30s", o.Duration)
	case o.Speed <= 0 || o.Speed > 60:
		return fmt.Errorf("--speed %v: want more than 0 and at most 60", o.Speed)
	case o.Mode != Live && o.Mode != Manual:
		return fmt.Errorf("mode %q: want live or manual", o.Mode)
	case o.Chaos && o.Mode != Live:
		return fmt.Errorf("chaos needs the live mode: it is the controller that must survive it")
	case o.LatentShare < 0 || o.LatentShare > 1:
		return fmt.Errorf("--latent-share %v: want 0 to 1", o.LatentShare)
	case o.RebootNotReset && o.Mode != Live:
		return fmt.Errorf("--reboot-not-reset needs the live mode: it is the controller's policy")
	case o.NoFeedback && o.Mode != Live:
		return fmt.Errorf("no feedback needs the live mode: the loop is the controller's")
	case o.Gate && o.Mode != Live:
		return fmt.Errorf("the health gate needs the live mode: it is the controller that runs it")
	case o.FaultsPerMinute < 0:
		return fmt.Errorf("--faults-per-minute %v: must not be negative", o.FaultsPerMinute)
	}
	if err := o.Hazard.Validate(); err != nil {
		return fmt.Errorf("--lemon-share, --lemon-multiple: %w", err)
	}
	return nil
}

// pace is every duration the run uses, after Speed.
type pace struct {
	faultsPerMinute float64
	holdFor         time.Duration
	recoveryHold    time.Duration
	rebootDelay     time.Duration
	bootDelay       time.Duration
	operatorDelay   time.Duration
	quiesce         time.Duration
	agentChecks     time.Duration // how often an agent rewrites its checks report
	latentSurface   time.Duration // workload time before a latent fault surfaces: 10 min, so a repeat shows within a short soak
}

func (o *Options) pace() pace {
	scale := func(d time.Duration) time.Duration {
		return max(time.Duration(float64(d)/o.Speed).Round(time.Second), time.Second)
	}
	rate := o.FaultsPerMinute
	if rate == 0 {
		rate = float64(o.Nodes) / 100
	}
	operator := o.OperatorDelay
	if operator == 0 {
		operator = 15 * time.Minute
	}
	quiesce := o.Quiesce
	if quiesce == 0 {
		quiesce = 3*time.Minute + scale(5*time.Minute)
	}
	return pace{
		faultsPerMinute: rate * o.Speed,
		holdFor:         scale(20 * time.Second),
		recoveryHold:    scale(30 * time.Second),
		rebootDelay:     scale(30 * time.Second),
		bootDelay:       scale(90 * time.Second),
		operatorDelay:   scale(operator),
		quiesce:         quiesce,
		agentChecks:     scale(30 * time.Second),
		latentSurface:   scale(10 * time.Minute),
	}
}

// maxParallel of the soak's policy: 5% of the fleet, at least 2.
func (o *Options) maxParallel() int { return max(2, o.Nodes/20) }
