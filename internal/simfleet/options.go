package simfleet

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/agent"
)

// Options configure --sim-fleet: one simulated agent per GPU node of the
// cluster, all in one process, for the demo and the soak test.
type Options struct {
	Enabled bool
	// NodeSelector picks the nodes that get an agent, as the DaemonSet's
	// nodeSelector does in a real cluster.
	NodeSelector string
	// Dir holds each agent's simulated kernel log; "" is a temporary
	// directory removed on exit.
	Dir string
	// FaultsPerMinute is the mean rate of faults injected into the fleet
	// (arrivals are a Poisson process); 0 injects none.
	FaultsPerMinute float64
	// Seed makes the fault draws and the simulated GPUs reproducible.
	Seed int64
	// Resync is how often the fleet lists the nodes to start agents on new
	// nodes and stop them on deleted or rebooting ones.
	Resync time.Duration
	// ScheduleFile is a fleet fault schedule (JSON lines of
	// schedule.ScheduledFault, see schedule.DrawSchedule), run from Epoch; a restarted fleet skips what its
	// journal says was done.
	ScheduleFile string
	// Epoch is when the schedule starts; zero means when the fleet starts.
	Epoch time.Time
	// LatentSurfaceAfter, when set, replaces the workload time after which
	// a planted latent fault surfaces (schedule.LatentSurfaceAfter).
	LatentSurfaceAfter time.Duration
	// Fabric is the nodes' RDMA network, where the mix's network faults
	// land (fabric.go): FabricAuto ("", the default) by each node's
	// instance type, FabricInfiniBand, FabricEFA or FabricNone.
	Fabric string

	// AnswerChecks: the fleet plays the Job controller and the kubelet
	// for the health gate's check Jobs on its nodes (checkjobs.go).
	AnswerChecks bool
	// CheckJobsManagedBy: answer only check Jobs whose spec.managedBy is
	// this; "" answers every check Job (a cluster with no Job controller).
	CheckJobsManagedBy string
	// CheckNamespace limits the Jobs answered to one namespace; "" is all.
	CheckNamespace string
	// CheckPoll is how often check Jobs are listed.
	CheckPoll time.Duration
	// CheckDurations is how long a simulated check runs, per kind
	// (DCGM, NCCL, NVBandwidth), divided by CheckSpeed.
	CheckDurations map[v1alpha1.CheckKind]time.Duration
	// CheckSpeed is the pace of the simulated checks (2: twice as fast).
	CheckSpeed float64
}

// DefaultCheckDurations are the simulated run times of the check kinds:
// about what `dcgmi diag -r 2`, an 8-GPU all_reduce_perf sweep and an
// nvbandwidth device-to-device test take on an HGX node.
var DefaultCheckDurations = map[v1alpha1.CheckKind]time.Duration{
	v1alpha1.CheckDCGM:        3 * time.Minute,
	v1alpha1.CheckNCCL:        time.Minute,
	v1alpha1.CheckNVBandwidth: time.Minute,
}

// ParseCheckDurations reads KIND=DURATION pairs (--sim-fleet-check-durations)
// over the defaults.
func ParseCheckDurations(pairs map[string]string) (map[v1alpha1.CheckKind]time.Duration, error) {
	out := maps.Clone(DefaultCheckDurations)
	for _, k := range slices.Sorted(maps.Keys(pairs)) {
		kind := v1alpha1.CheckKind(k)
		if _, ok := DefaultCheckDurations[kind]; !ok {
			return nil, fmt.Errorf("--sim-fleet-check-durations: unknown check kind %q (known: DCGM, NCCL, NVBandwidth)", k)
		}
		d, err := time.ParseDuration(pairs[k])
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("--sim-fleet-check-durations: %s=%q: want a positive duration like 90s", k, pairs[k])
		}
		out[kind] = d
	}
	return out, nil
}

// Validate checks the fleet's options and the agent options its agents
// run with (tmpl), naming the first bad one.
func (o Options) Validate(tmpl agent.Options) error {
	switch {
	case tmpl.Standalone:
		return errStandalone
	case tmpl.Backend != agent.BackendSim:
		return fmt.Errorf("--sim-fleet needs --gpu-backend sim, not %q", tmpl.Backend)
	case o.FaultsPerMinute < 0:
		return fmt.Errorf("--sim-fleet-faults-per-minute %v: must be 0 (none) or more", o.FaultsPerMinute)
	case o.Resync < 100*time.Millisecond:
		return fmt.Errorf("--sim-fleet-resync %v: must be at least 100ms", o.Resync)
	case !slices.Contains([]string{"", FabricAuto, FabricInfiniBand, FabricEFA, FabricNone}, o.Fabric):
		return fmt.Errorf("--sim-fleet-fabric %q: want %s, %s, %s or %s", o.Fabric, FabricAuto, FabricInfiniBand, FabricEFA, FabricNone)
	case o.LatentSurfaceAfter < 0:
		return fmt.Errorf("--sim-fleet-latent-surface-after %v: must not be negative", o.LatentSurfaceAfter)
	case o.AnswerChecks && o.CheckPoll < 100*time.Millisecond:
		return fmt.Errorf("--sim-fleet-check-poll %v: must be at least 100ms", o.CheckPoll)
	case o.AnswerChecks && !(o.CheckSpeed > 0):
		return fmt.Errorf("--sim-fleet-check-speed %v: must be above 0", o.CheckSpeed)
	}
	// Each agent gets its node's name; everything else is checked as for
	// one agent.
	tmpl.NodeName = "sim-fleet-node"
	return tmpl.Validate()
}

// errStandalone: the fleet exists only to talk to a cluster.
var errStandalone = errors.New("--sim-fleet needs a cluster: it cannot run with --standalone")
