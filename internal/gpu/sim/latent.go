package sim

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// A latent fault is a defect of the board that no passive reading shows:
// ECC counters, Xids, links and clocks stay clean, and it outlives a
// reboot (Reset keeps it). Only an active check under load finds it (the
// check outputs in checks.go derive from it), and after the GPU has been
// under workload for surfaceAfter it turns into a passive fatal fault, so
// a node returned to service without a check fails again later.

// LatentMode is what a latent fault breaks.
type LatentMode string

// Latent modes.
const (
	// LatentNCCLBandwidth scales the GPU's NVLink bandwidth by factor:
	// nccl-tests' bus bandwidth and nvbandwidth's row and column of it fall.
	LatentNCCLBandwidth LatentMode = "nccl-bandwidth"
	// LatentDCGMMemory fails DCGM's memory test (level 2 and up).
	LatentDCGMMemory LatentMode = "dcgm-memory"
	// LatentDCGMDiagnostic fails DCGM's diagnostic and targeted stress
	// tests (level 3 and up).
	LatentDCGMDiagnostic LatentMode = "dcgm-diagnostic"
)

var latentModes = []LatentMode{LatentNCCLBandwidth, LatentDCGMMemory, LatentDCGMDiagnostic}

// defaultLatentFactor is the bandwidth a degraded NVLink keeps: 0.6 puts
// an H100's ~385 GB/s all-reduce at ~230 GB/s, well under a 350 floor.
const defaultLatentFactor = 0.6

// surfaceKinds are the passive faults a latent one may surface as; the
// default is the one its defect shows as on real fleets.
var surfaceKinds = map[LatentMode]Kind{
	LatentNCCLBandwidth:  KindFellOffBus, // Xid 79
	LatentDCGMMemory:     KindDBE,        // Xid 48, uncorrected ECC
	LatentDCGMDiagnostic: KindFellOffBus,
}

// latentSpec is a latent fault's parsed params.
type latentSpec struct {
	mode         LatentMode
	factor       float64
	surfaceAfter time.Duration // 0: never surfaces
	surface      Kind
}

// latentState is one GPU's latent fault on this board and how long the
// GPU has been under workload in this boot.
type latentState struct {
	latentSpec
	load     time.Duration // before busySince
	surfaced bool          // in this boot
}

func (p *paramReader) latent() latentSpec {
	var s latentSpec
	mode := p.str("mode", "", nil, "")
	s.mode = LatentMode(mode)
	switch {
	case p.err != nil:
	case mode == "":
		p.fail("mode", "", "required (one of "+joinModes()+")")
	case !slices.Contains(latentModes, s.mode):
		p.fail("mode", mode, "want one of "+joinModes())
	}
	s.factor = p.float("factor", defaultLatentFactor, 0.01, 0.99)
	if _, ok := p.f.Params["factor"]; ok && p.err == nil && s.mode != LatentNCCLBandwidth {
		p.fail("factor", p.f.Params["factor"], "only mode nccl-bandwidth takes a factor")
	}
	s.surfaceAfter = p.duration("surface-after")
	s.surface = surfaceKinds[s.mode]
	if v, ok := p.get("surface", false); ok {
		switch Kind(v) {
		case KindFellOffBus, KindDBE:
			s.surface = Kind(v)
		default:
			p.fail("surface", v, "want fell-off-bus or dbe")
		}
	}
	return s
}

// duration reads a Go duration (0 when absent); it must not be negative.
func (p *paramReader) duration(name string) time.Duration {
	v, ok := p.get(name, false)
	if !ok {
		return 0
	}
	d, err := time.ParseDuration(strings.TrimSpace(v))
	switch {
	case err != nil:
		p.fail(name, v, `want a duration like "30m"`)
	case d < 0:
		p.fail(name, v, "must not be negative")
	}
	return d
}

func joinModes() string {
	out := make([]string, len(latentModes))
	for i, m := range latentModes {
		out[i] = string(m)
	}
	return strings.Join(out, ", ")
}

// SetBusy says whether a workload runs on the node's GPUs from now on;
// only time under workload brings a latent fault to the surface (a check
// is not workload: its result must not depend on when it ran).
func (n *Node) SetBusy(busy bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	now := n.clock.Now()
	if n.busy && !busy {
		for _, l := range n.latent {
			if l != nil {
				l.load += now.Sub(n.busySince)
			}
		}
	}
	if busy && !n.busy {
		n.busySince = now
	}
	n.busy = busy
}

// loadLocked is how long the GPU of l has been under workload this boot.
func (n *Node) loadLocked(l *latentState, now time.Time) time.Duration {
	if n.busy {
		return l.load + max(now.Sub(n.busySince), 0)
	}
	return l.load
}

// LatentLoad is how long GPU i has been under workload in this boot while
// it carries a latent fault (0 without one).
func (n *Node) LatentLoad(i int) time.Duration {
	n.mu.Lock()
	defer n.mu.Unlock()
	if i < 0 || i >= len(n.latent) || n.latent[i] == nil {
		return 0
	}
	return n.loadLocked(n.latent[i], n.clock.Now())
}

// surfaceDueLocked turns latent faults whose load time has come into
// their passive fault, once per boot.
func (n *Node) surfaceDueLocked(now time.Time) error {
	var errs []error
	for i, l := range n.latent {
		if l == nil || l.surfaced || l.surfaceAfter == 0 || n.loadLocked(l, now) < l.surfaceAfter {
			continue
		}
		errs = append(errs, n.surfaceLocked(i, now))
	}
	return errors.Join(errs...)
}

func (n *Node) surfaceLocked(i int, now time.Time) error {
	l := n.latent[i]
	l.surfaced = true
	s, err := Fault{Kind: l.surface, GPU: i}.parse()
	if err == nil {
		err = n.applyLocked(s, now)
	}
	if err != nil {
		return fmt.Errorf("latent %s fault of gpu %d surfacing as %s: %w", l.mode, i, l.surface, err)
	}
	return nil
}

// SurfacedLatent lists the GPUs whose latent fault surfaced in this boot.
func (n *Node) SurfacedLatent() []int {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []int
	for i, l := range n.latent {
		if l != nil && l.surfaced {
			out = append(out, i)
		}
	}
	return out
}

// SurfaceLatent makes GPU i's latent fault surface now, whatever its load
// time: for a restarted simulation that restores a boot in which it had.
func (n *Node) SurfaceLatent(i int) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if i < 0 || i >= len(n.latent) || n.latent[i] == nil {
		return fmt.Errorf("sim: gpu %d of node %s has no latent fault", i, n.opts.NodeName)
	}
	if n.latent[i].surfaced {
		return nil
	}
	return n.surfaceLocked(i, n.clock.Now())
}

// rearmLatentLocked starts a new boot of the board: its latent faults
// stay, their load time and surfacing start over.
func (n *Node) rearmLatentLocked() {
	for _, l := range n.latent {
		if l != nil {
			l.load, l.surfaced = 0, false
		}
	}
	n.busy = false
}
