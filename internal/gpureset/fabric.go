package gpureset

import (
	"fmt"
	"strings"

	"github.com/gpuheal/gpuheal/internal/gpu"
)

// Generation is an NVSwitch system's GPU generation, which decides what
// the fabric manager allows of a reset (NVIDIA Fabric Manager User
// Guide, "GPU Reset" and "GPU/VM/System Reset Capabilities and
// Limitations"):
//   - Volta (DGX-2/HGX-2, first-generation NVSwitch): GPUs and NVSwitches
//     are reset only together, all of a baseboard at once, with the
//     fabric manager stopped: no single-GPU reset, the node reboots.
//   - Ampere (DGX/HGX A100, second generation): one GPU resets on its
//     own, and the fabric manager must be running, to retrain the GPU's
//     NVLinks and register it with the fabric again.
//   - Hopper and later (HGX H100/H200/B200, third and fourth generation):
//     one GPU resets on its own and the reset no longer depends on the
//     fabric manager; the GPU's fabric state must come back to
//     "Completed" before it carries NVLink traffic again.
type Generation int

// Generations the rules tell apart.
const (
	GenerationUnknown Generation = iota
	GenerationVolta
	GenerationAmpere
	GenerationHopperOrLater
)

// GenerationOf reads the generation from the GPU's product name
// ("Tesla V100-SXM3-32GB", "NVIDIA A100-SXM4-80GB", "NVIDIA H100 80GB
// HBM3"); unknown names are GenerationUnknown.
func GenerationOf(name string) Generation {
	n := strings.ToUpper(name)
	switch {
	case strings.Contains(n, "V100"):
		return GenerationVolta
	case strings.Contains(n, "A100"), strings.Contains(n, "A800"):
		return GenerationAmpere
	case strings.Contains(n, "H100"), strings.Contains(n, "H200"), strings.Contains(n, "H800"),
		strings.Contains(n, "H20"), strings.Contains(n, "B100"), strings.Contains(n, "B200"),
		strings.Contains(n, "B300"), strings.Contains(n, "GH200"), strings.Contains(n, "GB200"):
		return GenerationHopperOrLater
	}
	return GenerationUnknown
}

// FabricAllows says whether the fabric manager's rules allow resetting g
// alone on the node of snap, and why (in words for the step's message).
// Without NVSwitches there is no fabric to ask. An unknown generation on
// an NVSwitch system is allowed when the fabric manager runs: the reset
// tool itself refuses what the platform cannot do, and that answer is
// parsed like any other.
func FabricAllows(snap *gpu.NodeSnapshot, g *gpu.GPUSnapshot) (bool, string) {
	if snap == nil || !snap.NVSwitch {
		return true, "no NVSwitch: nothing to coordinate with a fabric manager"
	}
	fm := snap.FabricManager
	if fm == "" {
		fm = "unknown"
	}
	switch GenerationOf(g.Name) {
	case GenerationVolta:
		return false, fmt.Sprintf("%s on an NVSwitch system: the fabric manager resets GPUs and NVSwitches of a baseboard only together; reboot instead", g.Name)
	case GenerationAmpere:
		if fm != "running" {
			return false, fmt.Sprintf("%s on an NVSwitch system needs the fabric manager running to reset one GPU (it is %s)", g.Name, fm)
		}
		return true, "Ampere NVSwitch system, fabric manager running: one GPU may be reset"
	case GenerationHopperOrLater:
		return true, fmt.Sprintf("%s: a single GPU resets without the fabric manager (it is %s); its fabric state is checked after", g.Name, fm)
	}
	if fm != "running" {
		return false, fmt.Sprintf("%s of unknown generation on an NVSwitch system with the fabric manager %s: not resetting one GPU", g.Name, fm)
	}
	return true, fmt.Sprintf("%s of unknown generation, fabric manager running: leaving the decision to the reset tool", g.Name)
}
