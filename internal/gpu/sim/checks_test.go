package sim

import (
	"strings"
	"testing"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/validation"
)

// The floors of the tests: NVSentinel's all-reduce gate is 350 GB/s on
// H100; the others sit just under the healthy figures.
const (
	h100NCCLFloor = 350
	h100NVBFloor  = 330
)

func latent(t *testing.T, n *Node, gpuIndex int, params map[string]string) {
	t.Helper()
	if err := n.Inject(Fault{Kind: KindLatent, GPU: gpuIndex, Params: params}); err != nil {
		t.Fatal(err)
	}
}

func wantOutcome(t *testing.T, what string, out []byte, v validation.Verdict, want v1alpha1.CheckOutcome) {
	t.Helper()
	if len(out) > MaxCheckOutput {
		t.Errorf("%s: %d bytes, more than a termination message holds (%d)", what, len(out), MaxCheckOutput)
	}
	if v.Outcome != want {
		t.Errorf("%s: %s (%s: %s), want %s\n%s", what, v.Outcome, v.Value, v.Message, want, out)
	}
}

// A healthy node passes every tool at every level, per product, and
// internal/validation reads each output as the tool's own.
func TestCheckOutputsOfAHealthyNodePass(t *testing.T) {
	for _, model := range Models() {
		n, _ := newTestNode(t, Options{NodeName: "gpu-node-0001", Model: model})
		p := perfByModel[model]
		for level := 1; level <= 4; level++ {
			run := n.DCGMDiag(level)
			out := run.Output
			wantOutcome(t, model+" dcgm", out, validation.JudgeDCGM(out, level), v1alpha1.CheckPassed)
			if run.ExitCode != 0 {
				t.Errorf("%s: a passing dcgmi exited %d", model, run.ExitCode)
			}
			rep, err := validation.ParseDCGM(out)
			if err != nil || rep.Format != validation.DCGMFormatJSON4 || len(rep.Tests) == 0 {
				t.Fatalf("%s level %d: parsed as %+v, %v", model, level, rep, err)
			}
		}
		out := n.NCCLAllReduce().Output
		v := validation.JudgeNCCL(out, 0.9*p.busBW)
		wantOutcome(t, model+" nccl", out, v, v1alpha1.CheckPassed)
		rep, err := validation.ParseNCCL(out)
		if err != nil || rep.AvgBusBW < 0.995*p.busBW || rep.AvgBusBW > 1.005*p.busBW {
			t.Errorf("%s: avg bus bandwidth %v (%v), want ~%v", model, rep.AvgBusBW, err, p.busBW)
		}
		out = n.NVBandwidth().Output
		wantOutcome(t, model+" nvbandwidth", out, validation.JudgeNVBandwidth(out, 0.95*p.d2d), v1alpha1.CheckPassed)
	}
}

// Each latent mode fails the check that looks for it, and only that one
// (and DCGM only from the level that runs the failing test).
func TestCheckOutputsFindLatentFaults(t *testing.T) {
	n, _ := newTestNode(t, Options{NodeName: "gpu-node-0002"})
	latent(t, n, 3, map[string]string{"mode": "nccl-bandwidth"})
	out := n.NCCLAllReduce().Output
	v := validation.JudgeNCCL(out, h100NCCLFloor)
	wantOutcome(t, "nccl", out, v, v1alpha1.CheckFailed)
	if rep, _ := validation.ParseNCCL(out); rep == nil || rep.AvgBusBW > 0.62*385 || rep.AvgBusBW < 0.58*385 {
		t.Errorf("avg bus bandwidth with a 0.6 link: %+v", rep)
	}
	out = n.NVBandwidth().Output
	v = validation.JudgeNVBandwidth(out, h100NVBFloor)
	wantOutcome(t, "nvbandwidth", out, v, v1alpha1.CheckFailed)
	if !strings.Contains(v.Message, "3") {
		t.Errorf("nvbandwidth names no pair of GPU 3: %s", v.Message)
	}
	out = n.DCGMDiag(4).Output
	wantOutcome(t, "dcgm with a bandwidth fault", out, validation.JudgeDCGM(out, 4), v1alpha1.CheckPassed)

	m, _ := newTestNode(t, Options{NodeName: "gpu-node-0003"})
	latent(t, m, 5, map[string]string{"mode": "dcgm-memory"})
	latent(t, m, 6, map[string]string{"mode": "dcgm-diagnostic"})
	out = m.DCGMDiag(1).Output
	wantOutcome(t, "dcgm level 1", out, validation.JudgeDCGM(out, 1), v1alpha1.CheckPassed)
	out = m.DCGMDiag(2).Output
	v = validation.JudgeDCGM(out, 2)
	wantOutcome(t, "dcgm level 2", out, v, v1alpha1.CheckFailed)
	if v.Value != "FAIL: memory on GPU 5" {
		t.Errorf("level 2 value %q", v.Value)
	}
	out = m.DCGMDiag(3).Output
	v = validation.JudgeDCGM(out, 3)
	wantOutcome(t, "dcgm level 3", out, v, v1alpha1.CheckFailed)
	if !strings.Contains(v.Value, "diagnostic on GPU 6") || !strings.Contains(v.Value, "memory on GPU 5") {
		t.Errorf("level 3 value %q", v.Value)
	}
	out = m.NCCLAllReduce().Output
	wantOutcome(t, "nccl with DCGM faults", out, validation.JudgeNCCL(out, h100NCCLFloor), v1alpha1.CheckPassed)
}

// A GPU off the bus breaks every tool: DCGM fails it, nccl-tests and
// nvbandwidth stop without a result (Error); every GPU failing still fits.
func TestCheckOutputsOfABrokenNode(t *testing.T) {
	n, _ := newTestNode(t, Options{NodeName: "gpu-node-0004"})
	if err := n.Inject(Fault{Kind: KindFellOffBus, GPU: 0}); err != nil {
		t.Fatal(err)
	}
	run := n.DCGMDiag(3)
	out := run.Output
	wantOutcome(t, "dcgm", out, validation.JudgeDCGM(out, 3), v1alpha1.CheckFailed)
	if run.ExitCode == 0 || n.NCCLAllReduce().ExitCode == 0 {
		t.Error("a failed dcgmi or a CUDA failure in nccl-tests exited 0")
	}
	out = n.NCCLAllReduce().Output
	wantOutcome(t, "nccl", out, validation.JudgeNCCL(out, h100NCCLFloor), v1alpha1.CheckError)
	out = n.NVBandwidth().Output
	wantOutcome(t, "nvbandwidth", out, validation.JudgeNVBandwidth(out, h100NVBFloor), v1alpha1.CheckError)

	all, _ := newTestNode(t, Options{NodeName: strings.Repeat("x", 253)})
	for i := range 8 {
		latent(t, all, i, map[string]string{"mode": "dcgm-diagnostic"})
	}
	out = all.DCGMDiag(4).Output
	wantOutcome(t, "dcgm, every GPU failing", out, validation.JudgeDCGM(out, 4), v1alpha1.CheckFailed)
	out = all.NCCLAllReduce().Output
	wantOutcome(t, "nccl, longest node name", out, validation.JudgeNCCL(out, h100NCCLFloor), v1alpha1.CheckPassed)
}

// Runs at different seconds differ a little; the same second gives the
// same bytes.
func TestCheckOutputsAreDeterministic(t *testing.T) {
	a, clk := newTestNode(t, Options{NodeName: "n"})
	b, _ := newTestNode(t, Options{NodeName: "n"})
	if string(a.NCCLAllReduce().Output) != string(b.NCCLAllReduce().Output) {
		t.Fatal("two equal nodes printed different nccl-tests output")
	}
	first := string(a.NCCLAllReduce().Output)
	clk.Step(61e9)
	if string(a.NCCLAllReduce().Output) == first {
		t.Fatal("a later run printed the same figures")
	}
}
