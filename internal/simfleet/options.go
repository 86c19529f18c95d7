package simfleet

import (
	"errors"
	"fmt"
	"time"

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
	}
	// Each agent gets its node's name; everything else is checked as for
	// one agent.
	tmpl.NodeName = "sim-fleet-node"
	return tmpl.Validate()
}

// errStandalone: the fleet exists only to talk to a cluster.
var errStandalone = errors.New("--sim-fleet needs a cluster: it cannot run with --standalone")
