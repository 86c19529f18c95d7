// Package validation reads the outputs of the health gate's active checks
// (DCGM diagnostics, nccl-tests, nvbandwidth) in their real formats and
// judges them against a floor. It is domain code: it knows nothing of the
// API server, and both the controller and `gpuheal diagnose` use it.
package validation

import "github.com/gpuheal/gpuheal/api/v1alpha1"

// Verdict is what one run of a check tool says about a node.
type Verdict struct {
	// Outcome: Passed, Failed (the node fell short) or Error (the output
	// says nothing either way: empty, truncated, not the tool's format).
	Outcome v1alpha1.CheckOutcome
	// Value measured, with its unit: "371.2 GB/s", "PASS", "FAIL (2 of 9 tests)".
	Value string
	// Floor it had to reach: "350 GB/s", "level 3: every test passes".
	Floor string
	// Message says why, naming the GPU or test that decided it.
	Message string
	// Excerpt of the output around what decided (at most 2 KiB).
	Excerpt string
}

// JudgeDCGM judges the output of `dcgmi diag -r level [-j]`: JSON (DCGM
// 3.x and 4.x) or the text table.
func JudgeDCGM(output []byte, level int) Verdict {
	return Verdict{Outcome: v1alpha1.CheckError, Message: "DCGM parser not built yet"}
}

// JudgeNCCL judges nccl-tests output (all_reduce_perf and friends, with or
// without srun/mpirun rank prefixes) against a floor on its "Avg bus
// bandwidth" in GB/s.
func JudgeNCCL(output []byte, minGBps float64) Verdict {
	return Verdict{Outcome: v1alpha1.CheckError, Message: "NCCL parser not built yet"}
}

// JudgeNVBandwidth judges nvbandwidth output against a floor on its
// smallest device-to-device figure in GB/s.
func JudgeNVBandwidth(output []byte, minGBps float64) Verdict {
	return Verdict{Outcome: v1alpha1.CheckError, Message: "nvbandwidth parser not built yet"}
}
