// Package validation reads the outputs of the health gate's active checks
// (DCGM diagnostics, nccl-tests, nvbandwidth) in their real formats and
// judges them against a floor. It is domain code: it knows nothing of the
// API server, and both the controller and `gpuheal diagnose` use it.
//
// The output comes from a Job on the node being judged, so it is untrusted:
// every parser bounds what it keeps, never panics, and says where the input
// stopped making sense.
package validation

import (
	"fmt"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
)

// Verdict is what one run of a check tool says about a node.
type Verdict struct {
	// Outcome: Passed, Failed (the node fell short) or Error (the output
	// says nothing either way: empty, truncated, not the tool's format).
	Outcome v1alpha1.CheckOutcome `json:"outcome"`
	// Value measured, with its unit: "371.2 GB/s", "PASS (9 tests)",
	// "FAIL: memory on GPU 3".
	Value string `json:"value,omitempty"`
	// Floor it had to reach: "350 GB/s", "level 3: every test passes".
	Floor string `json:"floor,omitempty"`
	// Message says why, naming the GPU or test that decided it.
	Message string `json:"message"`
	// Excerpt of the output around what decided (at most MaxExcerpt bytes).
	Excerpt string `json:"excerpt,omitempty"`
}

// MaxExcerpt bounds Verdict.Excerpt (the API's CheckResult.Excerpt limit).
const MaxExcerpt = 2048

// maxValue bounds Verdict.Value: it is shown in one table cell.
const maxValue = 160

// JudgeDCGM judges the output of `dcgmi diag -r level [-j]`: JSON (DCGM
// 3.x and 4.x) or the text table. Skip and Warn do not fail (Warn is named
// in the message); any Fail does.
func JudgeDCGM(output []byte, level int) Verdict {
	floor := "every test passes"
	if level > 0 {
		floor = fmt.Sprintf("level %d: every test passes", level)
	}
	rep, err := ParseDCGM(output)
	if err != nil {
		return errorVerdict(floor, err, output)
	}
	return rep.judge(floor)
}

// JudgeNCCL judges nccl-tests output (all_reduce_perf and friends, with or
// without srun/mpirun rank prefixes) against a floor on its "Avg bus
// bandwidth" in GB/s.
func JudgeNCCL(output []byte, minGBps float64) Verdict {
	floor := gbps(minGBps)
	rep, err := ParseNCCL(output)
	if err != nil {
		return errorVerdict(floor, err, output)
	}
	return rep.judge(minGBps, floor)
}

// JudgeNVBandwidth judges nvbandwidth output against a floor on its
// smallest device-to-device figure in GB/s.
func JudgeNVBandwidth(output []byte, minGBps float64) Verdict {
	floor := gbps(minGBps)
	rep, err := ParseNVBandwidth(output)
	if err != nil {
		return errorVerdict(floor, err, output)
	}
	return rep.judge(minGBps, floor)
}

func gbps(v float64) string { return fmt.Sprintf("%.4g GB/s", v) }

// errorVerdict is the verdict on output that says nothing: its excerpt is
// the output's tail, where a crash or a truncation usually shows.
func errorVerdict(floor string, err error, output []byte) Verdict {
	return Verdict{Outcome: v1alpha1.CheckError, Floor: floor, Message: err.Error(), Excerpt: tail(string(output), MaxExcerpt)}
}
