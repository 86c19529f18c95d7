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

	clocktesting "k8s.io/utils/clock/testing"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/analyzer"
	"github.com/gpuheal/gpuheal/internal/finding"
)

var update = flag.Bool("update", false, "rewrite the golden Node of the wire contract")

// wireGolden is the Node as the agent writes it, the one fixture both sides
// of the wire contract test against: this test checks the agent writes
// exactly it, internal/remediation's wire test checks what the controller
// reads from it. A key renamed on one side only fails one of the two.
const wireGolden = "../../../api/v1alpha1/testdata/agent-node.json"

// TestAgentWritesTheWireGolden runs the real Node writers (conditions,
// advice, labels, warnings, risk) for a node with a GPU to replace, a
// kernel to reboot and a predicted failure, and compares the Node.
func TestAgentWritesTheWireGolden(t *testing.T) {
	api := startFake(t, "gpu-0000")
	since := time.Date(2026, 12, 1, 11, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(since)
	p := NewConditions(api.Client, "gpu-0000", clk, slog.New(slog.DiscardHandler))
	p.Set([]analyzer.ConditionStatus{
		{Type: v1alpha1.ConditionAcceleratedHardwareReady, Status: analyzer.StatusFalse, Reason: "NvidiaXID79Error",
			Message: "GPU 3 (0000:3b:00.0) fell off the bus", Action: finding.ActionReplace, LastTransitionTime: since},
		{Type: v1alpha1.ConditionKernelReady, Status: analyzer.StatusFalse, Reason: "KernelOops",
			Message: "kernel oops in nvidia module", Action: finding.ActionReboot, LastTransitionTime: since},
	}, 7, 3)
	p.SetExtra(analyzer.ConditionStatus{Type: v1alpha1.ConditionGPUFailurePredicted, Status: analyzer.StatusTrue,
		Reason: v1alpha1.ReasonGPUFailurePredicted, Message: "GPU 5: failure predicted", Action: finding.ActionNone,
		LastTransitionTime: since})
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
		if err := os.WriteFile(wireGolden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(wireGolden)
	if err != nil {
		t.Fatalf("%v (go test ./internal/agent/nodestatus -run WireGolden -update writes it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the agent writes a Node other than %s (rerun with -update if the contract changed on purpose, then check the controller's side):\n%s", wireGolden, got)
	}
}
