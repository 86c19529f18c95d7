package diagnose

import (
	"fmt"

	"github.com/gpuheal/gpuheal/internal/finding"
	"github.com/gpuheal/gpuheal/internal/gpu"
)

// retiredPagesLimit is the count of retired pages at which NVIDIA's
// guidance is to replace the board (pre-Ampere page retirement).
const retiredPagesLimit = 60

// SnapshotFindings reports the problems an nvidia-smi dump (or any
// snapshot) shows by itself, without a kernel log: uncorrectable ECC,
// row-remap and page-retirement state, reset and recovery requests, and
// GPUs that did not answer.
func SnapshotFindings(s *gpu.NodeSnapshot, source string) []finding.Finding {
	var out []finding.Finding
	add := func(g *gpu.GPUSnapshot, code string, sev finding.Severity, act finding.Action, format string, args ...any) {
		f := finding.Finding{Source: source, Code: code, Severity: sev, Action: act, Time: s.Time, Message: fmt.Sprintf(format, args...)}
		if g != nil {
			f.GPU = g.PCIBusID
			f.Message = fmt.Sprintf("GPU %d (%s): %s", g.Index, g.Name, f.Message)
		}
		out = append(out, f)
	}
	if s.ExpectedGPUs > 0 && s.FoundGPUs < s.ExpectedGPUs {
		add(nil, "GPU_MISSING", finding.Fatal, finding.ActionReboot, "%d of %d GPUs found", s.FoundGPUs, s.ExpectedGPUs)
	}
	if s.KernelModuleVersion != "" && s.DriverVersion != "" && s.KernelModuleVersion != s.DriverVersion {
		add(nil, "DRIVER_MISMATCH", finding.Fatal, finding.ActionReboot, "kernel module %s, user-space driver %s", s.KernelModuleVersion, s.DriverVersion)
	}
	for i := range s.GPUs {
		g := &s.GPUs[i]
		if g.Missing {
			add(g, "GPU_MISSING", finding.Fatal, finding.ActionReboot, "does not answer (fallen off the bus or lost by the driver)")
			continue
		}
		if v := g.ECC.VolatileUncorrected; v != nil && *v > 0 {
			add(g, "DBE", finding.Fatal, finding.ActionResetGPU, "%d uncorrectable ECC errors since the driver loaded", *v)
		} else if v := g.ECC.AggregateUncorrected; v != nil && *v > 0 {
			add(g, "DBE_HISTORY", finding.Warning, finding.ActionNone, "%d uncorrectable ECC errors over the GPU's life", *v)
		}
		if r := g.RemappedRows; r != nil {
			if r.Failure {
				add(g, "ROW_REMAP_FAILURE", finding.Fatal, finding.ActionReplace, "row remapping failed: no spare rows left")
			}
			if r.Pending {
				add(g, "ROW_REMAP_PENDING", finding.Warning, finding.ActionResetGPU, "a row remap is pending: a GPU reset activates it")
			}
		}
		if p := g.RetiredPages; p != nil {
			if n := p.SingleBit + p.DoubleBit; n >= retiredPagesLimit {
				add(g, "RETIRED_PAGES_LIMIT", finding.Fatal, finding.ActionReplace, "%d pages retired (limit %d)", n, retiredPagesLimit)
			}
			if p.Pending {
				add(g, "RETIRED_PAGES_PENDING", finding.Warning, finding.ActionResetGPU, "a page retirement is pending: a GPU reset activates it")
			}
		}
		if g.ResetRequired != nil && *g.ResetRequired {
			add(g, "RESET_REQUIRED", finding.Warning, finding.ActionResetGPU, "the driver asks for a GPU reset")
		}
		if g.DrainAndResetRecommended != nil && *g.DrainAndResetRecommended {
			add(g, "DRAIN_AND_RESET", finding.Warning, finding.ActionResetGPU, "the driver recommends draining and resetting the GPU")
		}
		if a := g.RecoveryAction; a != nil && *a != gpu.RecoveryNone {
			sev, act := recoveryVerdict(*a)
			add(g, "GPU_RECOVERY_ACTION", sev, act, "GPU recovery action %s", a.String())
		}
		for _, e := range g.Errors {
			// The backend's message already names the GPU and the query.
			out = append(out, finding.Finding{Source: source, Code: "GPU_QUERY_ERROR", GPU: g.PCIBusID,
				Severity: finding.Warning, Action: finding.ActionNone, Time: s.Time, Message: e.Message})
		}
	}
	return out
}

// recoveryVerdict maps the driver's recovery action onto our vocabulary.
func recoveryVerdict(a gpu.RecoveryAction) (finding.Severity, finding.Action) {
	switch a {
	case gpu.RecoveryGPUReset, gpu.RecoveryDrainAndReset:
		return finding.Fatal, finding.ActionResetGPU
	case gpu.RecoveryNodeReboot:
		return finding.Fatal, finding.ActionReboot
	case gpu.RecoveryDrainP2P:
		return finding.Warning, finding.ActionRestartApp
	}
	return finding.Unknown, finding.ActionNone
}
