package nodestatus

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"log/slog"
	"os"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/analyzer"
	"github.com/gpuheal/gpuheal/internal/finding"
	"github.com/gpuheal/gpuheal/internal/gpu"
	"github.com/gpuheal/gpuheal/internal/gpu/sim"
	"github.com/gpuheal/gpuheal/internal/gpucheck"
)

var update = flag.Bool("update", false, "rewrite the golden Node of the wire contract")

// wireGolden is the Node as the agent writes it, the one fixture both sides
// of the wire contract test against: this test checks the agent writes
// exactly it, internal/remediation's wire test checks what the controller
// reads from it. A key renamed on one side only fails one of the two.
const wireGolden = "../../../api/v1alpha1/testdata/agent-node.json"

// TestAgentWritesTheWireGolden runs the real Node writers (conditions,
// advice, labels, warnings, risk, the checks report, the GPU fault
// report) for a node with a GPU to replace, a kernel to reboot and a
// predicted failure, and compares the Node.
func TestAgentWritesTheWireGolden(t *testing.T) {
	checkWireGolden(t, v1alpha1.ConditionTypesGPUHeal, wireGolden)
}

// TestAgentWritesTheEKSWireGolden: with --condition-types=eks the same
// conditions are written under the EKS names, the advice keyed by them and
// no condition under gpuheal's names (the controller side reads it in
// internal/remediation's wire test).
func TestAgentWritesTheEKSWireGolden(t *testing.T) {
	checkWireGolden(t, v1alpha1.ConditionTypesEKS, wireGoldenEKS)
}

// wireGoldenEKS is the Node an agent with --condition-types=eks writes.
const wireGoldenEKS = "../../../api/v1alpha1/testdata/agent-node-eks.json"

func checkWireGolden(t *testing.T, set, golden string) {
	t.Helper()
	api := startFake(t, "gpu-0000")
	since := time.Date(2026, 12, 1, 11, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(since)
	p := NewConditions(api.Client, "gpu-0000", clk, slog.New(slog.DiscardHandler))
	types, ok := v1alpha1.AgentConditionTypesFor(set)
	if !ok {
		t.Fatalf("no condition type set %q", set)
	}
	p.PublishAs(types)
	p.Set([]analyzer.ConditionStatus{
		{Type: v1alpha1.ConditionGPUHealAcceleratorHealthy, Status: analyzer.StatusFalse, Reason: "NvidiaXID79Error",
			Message: "GPU 3 (0000:3b:00.0) fell off the bus", Action: finding.ActionReplace, LastTransitionTime: since},
		{Type: v1alpha1.ConditionGPUHealKernelHealthy, Status: analyzer.StatusFalse, Reason: "KernelOops",
			Message: "kernel oops in nvidia module", Action: finding.ActionReboot, LastTransitionTime: since},
	}, 7, 3)
	if err := p.SetGPUFaults(&v1alpha1.GPUFaultReport{Time: metav1.NewTime(since), GPUs: []v1alpha1.GPUFault{{
		GPURef: v1alpha1.GPURef{Index: 3, UUID: "GPU-3c2a1f9e-7b4d-4e21-9a0c-5d6e7f8a9b0c", BusID: "00000000:3B:00.0"},
		Reason: "XID79", Action: string(finding.ActionReplace), Pods: []string{"ml/train-3"}, Sharing: v1alpha1.GPUSharingExclusive,
	}}}); err != nil {
		t.Fatal(err)
	}
	p.SetExtra(analyzer.ConditionStatus{Type: v1alpha1.ConditionGPUFailurePredicted, Status: analyzer.StatusTrue,
		Reason: v1alpha1.ReasonGPUFailurePredicted, Message: "GPU 5: failure predicted", Action: finding.ActionNone,
		LastTransitionTime: since})
	p.ReportChecksEvery(30 * time.Second)
	p.SetChecks(gpucheck.Report(fellOffTheBus(t, clk), "6f1c7a2e-3d4b-4c5a-9e8f-0a1b2c3d4e5f", since))
	mustSync(t, p)
	if err := PatchRiskAnnotation(context.Background(), api.Client, "gpu-0000", "0.91"); err != nil {
		t.Fatal(err)
	}

	got, err := json.MarshalIndent(api.Node(), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (go test ./internal/agent/nodestatus -run WireGolden -update writes it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the agent writes a Node other than %s (rerun with -update if the contract changed on purpose, then check the controller's side):\n%s", golden, got)
	}
}

// fellOffTheBus is a snapshot of an 8-GPU sim node whose GPU 3 fell off
// the bus: the report of the golden fails GPUsPresent.
func fellOffTheBus(t *testing.T, clk *clocktesting.FakeClock) *gpu.NodeSnapshot {
	t.Helper()
	n, err := sim.New(sim.Options{NodeName: "gpu-0000", Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Inject(sim.Fault{Kind: sim.KindFellOffBus, GPU: 3}); err != nil {
		t.Fatal(err)
	}
	s, err := n.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return s
}
