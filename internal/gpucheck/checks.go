package gpucheck

import (
	"fmt"
	"strconv"
	"strings"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/gpu"
	"github.com/gpuheal/gpuheal/internal/gpu/host"
)

// LoadedPercent is the GPU utilization from which a PCIe link is judged:
// an idle GPU's link trains down to save power, so a lower generation
// there says nothing.
const LoadedPercent = 30.0

const (
	notExposed = "not exposed by the driver"
	idle       = "idle: not judged"
)

func pass(value, expected, msg string) v1alpha1.AgentCheck {
	return v1alpha1.AgentCheck{Passed: true, Value: value, Expected: expected, Message: msg}
}

func fail(value, expected, msg string) v1alpha1.AgentCheck {
	return v1alpha1.AgentCheck{Passed: false, Value: value, Expected: expected, Message: msg}
}

// answering are the GPUs that answered; a Missing one is GPUsPresent's
// failure and says nothing to the other checks.
func answering(s *gpu.NodeSnapshot) []gpu.GPUSnapshot {
	out := make([]gpu.GPUSnapshot, 0, len(s.GPUs))
	for _, g := range s.GPUs {
		if !g.Missing {
			out = append(out, g)
		}
	}
	return out
}

func gpuName(g gpu.GPUSnapshot) string {
	return fmt.Sprintf("GPU %d (%s)", g.Index, g.PCIBusID)
}

func count(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

// gpusPresent: every expected GPU answers. A GPU the driver lists but
// cannot reach (Missing) counts as absent.
func gpusPresent(s *gpu.NodeSnapshot) v1alpha1.AgentCheck {
	var missing []string
	for _, g := range s.GPUs {
		if g.Missing {
			missing = append(missing, gpuName(g))
		}
	}
	found := len(s.GPUs) - len(missing)
	value := count(found, "GPU")
	expected := "at least 1 GPU"
	if s.ExpectedGPUs > 0 {
		expected = count(s.ExpectedGPUs, "GPU")
	}
	switch {
	case found == 0:
		return fail(value, expected, "no GPU answers")
	case len(missing) > 0:
		return fail(value, expected, strings.Join(missing, ", ")+" does not answer: fallen off the bus or lost by the driver")
	case s.ExpectedGPUs > 0 && found < s.ExpectedGPUs:
		return fail(value, expected, fmt.Sprintf("%d of %d GPUs found", found, s.ExpectedGPUs))
	case s.ExpectedGPUs == 0:
		return pass(value, expected, "expected count unknown (no --expected-gpus, GPU count label or known instance type): judged on the GPUs found")
	case found > s.ExpectedGPUs:
		// More is not a broken GPU; a stale count label is for the
		// operator, not a reason to replace the node.
		return pass(value, expected, "more GPUs than expected")
	}
	return pass(value, expected, "")
}

// noVolatileECC: no uncorrectable ECC error since the driver loaded.
func noVolatileECC(s *gpu.NodeSnapshot) v1alpha1.AgentCheck {
	var total uint64
	var bad []string
	seen := false
	for _, g := range answering(s) {
		v := g.ECC.VolatileUncorrected
		if v == nil || (g.ECCModeEnabled != nil && !*g.ECCModeEnabled) {
			continue
		}
		seen = true
		if *v > 0 {
			total += *v
			bad = append(bad, fmt.Sprintf("%s: %d", gpuName(g), *v))
		}
	}
	const expected = "0 uncorrected ECC errors"
	switch {
	case !seen:
		return pass("", expected, notExposed)
	case total > 0:
		return fail(strconv.FormatUint(total, 10)+" uncorrected ECC errors", expected,
			"volatile uncorrected ECC errors since the driver loaded: "+strings.Join(bad, ", "))
	}
	return pass(expected, expected, "")
}

// noRowRemapPending: no row remap (Ampere and later) or page retirement
// (before) waiting for a GPU reset, and no bank out of spare rows.
func noRowRemapPending(s *gpu.NodeSnapshot) v1alpha1.AgentCheck {
	var bad []string
	seen := false
	for _, g := range answering(s) {
		if r := g.RemappedRows; r != nil {
			seen = true
			switch {
			case r.Failure:
				bad = append(bad, gpuName(g)+": row remapping failed")
			case r.Pending:
				bad = append(bad, gpuName(g)+": row remap pending")
			}
		}
		if p := g.RetiredPages; p != nil {
			seen = true
			if p.Pending {
				bad = append(bad, gpuName(g)+": page retirement pending")
			}
		}
	}
	const expected = "none pending or failed"
	switch {
	case !seen:
		return pass("", expected, notExposed)
	case len(bad) > 0:
		return fail(count(len(bad), "GPU")+" pending or failed", expected, strings.Join(bad, ", "))
	}
	return pass(expected, expected, "")
}

// nvlinksUp: on an NVSwitch board every link is up; elsewhere a GPU with
// some links up and some down is broken (a PCIe board without a bridge
// reports every link inactive), as the health rule nvlink-down judges.
func nvlinksUp(s *gpu.NodeSnapshot) v1alpha1.AgentCheck {
	var up, all int
	var bad []string
	for _, g := range answering(s) {
		var down []string
		gpuUp := 0
		for _, l := range g.NVLink {
			all++
			if l.Active {
				up++
				gpuUp++
			} else {
				down = append(down, strconv.Itoa(l.Link))
			}
		}
		if len(down) > 0 && (s.NVSwitch || gpuUp > 0) {
			bad = append(bad, gpuName(g)+" link "+strings.Join(down, ", ")+" down")
		}
	}
	value := fmt.Sprintf("%d of %d links up", up, all)
	expected := fmt.Sprintf("%d of %d links up", all, all)
	switch {
	case all == 0:
		return pass("", "every link up", "no NVLink on this node, or "+notExposed)
	case len(bad) > 0:
		return fail(value, expected, strings.Join(bad, "; "))
	case up == 0:
		return pass(value, "no link or every link up", "no NVLink bridge: every link inactive")
	}
	return pass(value, expected, "")
}

// fabricHealthy: on an NVSwitch system the fabric manager runs, and every
// GPU that reports a fabric registration finished it with success.
func fabricHealthy(s *gpu.NodeSnapshot) v1alpha1.AgentCheck {
	const expected = "Completed/Success"
	if s.NVSwitch && (s.FabricManager == host.FabricManagerStopped || s.FabricManager == host.FabricManagerNotInstalled) {
		return fail("fabric manager "+s.FabricManager, "fabric manager "+host.FabricManagerRunning,
			"nvidia-fabricmanager is "+s.FabricManager+" on an NVSwitch system: NVLink cannot be set up")
	}
	var bad []string
	seen := false
	for _, g := range answering(s) {
		if g.FabricState == "" && g.FabricStatus == "" {
			continue
		}
		seen = true
		if g.FabricState != "Completed" || g.FabricStatus != "Success" {
			bad = append(bad, gpuName(g)+": "+g.FabricState+"/"+g.FabricStatus)
		}
	}
	switch {
	case len(bad) > 0:
		return fail(count(len(bad), "GPU")+" not registered", expected, "fabric registration "+strings.Join(bad, ", "))
	case seen:
		return pass(expected, expected, "")
	case s.NVSwitch:
		return pass("fabric manager "+s.FabricManager, expected, "fabric registration "+notExposed)
	}
	return pass("", expected, "no fabric on this product (no NVSwitch, no fabric state)")
}

// pcieLinkAtMax: under load, every GPU's link at its maximum generation
// and width. A GPU below LoadedPercent is not judged.
func pcieLinkAtMax(s *gpu.NodeSnapshot) v1alpha1.AgentCheck {
	var bad []string
	judged, idleGPUs, unexposed := 0, 0, 0
	for _, g := range answering(s) {
		p := g.PCIe
		if p.LinkGenCurrent == nil || p.LinkGenMax == nil || p.LinkWidthCurrent == nil || p.LinkWidthMax == nil {
			unexposed++
			continue
		}
		if g.UtilizationGPUPercent == nil || *g.UtilizationGPUPercent < LoadedPercent {
			idleGPUs++
			continue
		}
		judged++
		if *p.LinkGenCurrent < *p.LinkGenMax || *p.LinkWidthCurrent < *p.LinkWidthMax {
			bad = append(bad, fmt.Sprintf("%s: gen %d/%d x%d/x%d at %.0f%% load", gpuName(g),
				*p.LinkGenCurrent, *p.LinkGenMax, *p.LinkWidthCurrent, *p.LinkWidthMax, *g.UtilizationGPUPercent))
		}
	}
	const expected = "maximum generation and width"
	switch {
	case len(bad) > 0:
		return fail(count(len(bad), "GPU")+" below maximum", expected, "PCIe link below its maximum under load: "+strings.Join(bad, ", "))
	case judged > 0:
		msg := ""
		if idleGPUs > 0 {
			msg = count(idleGPUs, "idle GPU") + " not judged"
		}
		return pass(count(judged, "GPU")+" at maximum under load", expected, msg)
	case idleGPUs > 0:
		return pass("", expected, idle)
	}
	return pass("", expected, notExposed)
}

// noRecoveryPending: the driver asks for no recovery action (NVML field
// 230, or nvidia-smi's reset status).
func noRecoveryPending(s *gpu.NodeSnapshot) v1alpha1.AgentCheck {
	var bad []string
	seen := false
	for _, g := range answering(s) {
		switch {
		case g.RecoveryAction != nil:
			seen = true
			if *g.RecoveryAction != gpu.RecoveryNone {
				bad = append(bad, gpuName(g)+": "+g.RecoveryAction.String())
			}
		case g.ResetRequired != nil || g.DrainAndResetRecommended != nil:
			seen = true
			if g.DrainAndResetRecommended != nil && *g.DrainAndResetRecommended {
				bad = append(bad, gpuName(g)+": "+gpu.RecoveryDrainAndReset.String())
			} else if g.ResetRequired != nil && *g.ResetRequired {
				bad = append(bad, gpuName(g)+": "+gpu.RecoveryGPUReset.String())
			}
		}
	}
	expected := gpu.RecoveryNone.String()
	switch {
	case !seen:
		return pass("", expected, notExposed)
	case len(bad) > 0:
		return fail(count(len(bad), "GPU")+" with an action pending", expected, "the driver asks for "+strings.Join(bad, ", "))
	}
	return pass(expected, expected, "")
}

// driverVersionsMatch: the loaded kernel module is the user-space
// driver's version (a half-done upgrade leaves them apart).
func driverVersionsMatch(s *gpu.NodeSnapshot) v1alpha1.AgentCheck {
	value, expected := labelled("kernel module ", s.KernelModuleVersion), labelled("driver ", s.DriverVersion)
	switch {
	case s.DriverVersion == "" || s.KernelModuleVersion == "":
		return pass(value, expected, "driver or kernel module version "+notExposed)
	case s.DriverVersion != s.KernelModuleVersion:
		return fail(value, expected, "the kernel module and the user-space driver differ: a driver upgrade not finished by a reboot")
	}
	return pass(value, expected, "")
}

// labelled is label+v, or "" for no v.
func labelled(label, v string) string {
	if v == "" {
		return ""
	}
	return label + v
}
