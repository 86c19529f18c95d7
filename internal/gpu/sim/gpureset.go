package sim

import (
	"context"
	"fmt"
	"strings"

	"github.com/gpuheal/gpuheal/internal/gpu"
)

// The sim as the GPU tool of a single-GPU reset (the agent's Device,
// internal/gpureset): it answers as nvidia-smi would, so the reset's
// output goes through the same parser as a real one.
//
// A reset of one GPU clears what a real one clears: the volatile ECC
// counters, the recovery action (reset required, drain and reset) that
// contained and uncontained errors (Xid 94/95, 154) left, a pending row
// remap (it becomes a remapped row), pending page retirement (the pages
// are retired), and the NVLinks, which it retrains. It keeps what it does
// not: aggregate counters, remapped and retired rows, Xid totals, a
// thermal or PCIe fault of the board, and a latent fault, whose load time
// starts over so that it comes back under workload. A GPU fallen off the
// bus or gone cannot be reset.

// GPUProcesses lists the processes on the GPU: the sim runs none.
func (n *Node) GPUProcesses(_ context.Context, _ string) ([]int, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil, errClosed
	}
	return nil, nil
}

// SetPersistenceMode turns the GPU's persistence mode on or off; a lost
// GPU cannot be reached.
func (n *Node) SetPersistenceMode(_ context.Context, bus string, on bool) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	g, err := n.gpuAtLocked(bus)
	if err != nil {
		return err
	}
	if g.lost {
		// nvidia-smi's own words, which the reset's parser reads.
		return fmt.Errorf("Unable to set persistence mode for GPU %s: GPU is lost", smiBus(g.bus)) //nolint:staticcheck // ST1005: the tool's message, capital included
	}
	g.persistOff = !on
	return nil
}

// ResetGPU resets the GPU at bus and prints what nvidia-smi prints. Like
// a real driver it refuses while persistence mode is on: the persistence
// daemon's handle is a client.
func (n *Node) ResetGPU(_ context.Context, bus string) (string, bool, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return "", false, errClosed
	}
	g, err := n.gpuAtLocked(bus)
	if err != nil {
		return "No devices were found\n", true, nil
	}
	if g.lost {
		return fmt.Sprintf("Unable to determine the device handle for GPU %s: GPU is lost.  Reboot the system to recover this GPU\n", smiBus(g.bus)), true, nil
	}
	if !g.persistOff {
		return fmt.Sprintf("The following GPUs could not be reset:\n  GPU %s: In use by another client\n", smiBus(g.bus)), true, nil
	}
	n.resetGPULocked(g)
	return fmt.Sprintf("GPU %s was successfully reset.\n", smiBus(g.bus)), false, nil
}

// GPUResets is how many times GPU i was reset in this boot (Reset, a
// reboot, starts the count over).
func (n *Node) GPUResets(i int) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if i < 0 || i >= len(n.gpus) {
		return 0
	}
	return n.gpus[i].resets
}

func (n *Node) resetGPULocked(g *gpuState) {
	g.resets++
	g.volCorr, g.volUncorr = 0, 0
	g.recovery = gpu.RecoveryNone
	g.remap.Pending = false
	g.retired.Pending = false
	g.pending = nil
	for i := range g.links {
		g.links[i].down = false
	}
	if l := n.latent[g.index]; l != nil {
		l.load, l.surfaced = 0, false
		if n.busy {
			l.load = -max(n.clock.Now().Sub(n.busySince), 0) // load counts from now
		}
	}
}

// gpuAtLocked is the listed GPU at bus (any form NormalizePCIBusID takes).
func (n *Node) gpuAtLocked(bus string) (*gpuState, error) {
	b, err := gpu.NormalizePCIBusID(bus)
	if err != nil {
		return nil, err
	}
	for _, g := range n.gpus {
		if g.bus == b && !g.gone {
			return g, nil
		}
	}
	return nil, fmt.Errorf("sim: node %s has no GPU at %s", n.opts.NodeName, bus)
}

// smiBus is the bus ID as nvidia-smi prints it.
func smiBus(bus string) string { return "0000" + strings.ToUpper(bus) }
