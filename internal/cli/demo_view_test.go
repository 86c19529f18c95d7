package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gpuhealv1 "github.com/gpuheal/gpuheal/api/v1alpha1"
)

// A finished check prints once, with its value, floor and time, before the
// phase it led to; a running one not at all.
func TestDemoViewPrintsChecksInOrder(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	var out bytes.Buffer
	v := newDemoView(nil, &out, t0)
	r := gpuhealv1.NodeRemediation{ObjectMeta: metav1.ObjectMeta{Name: "n1-a"}}
	r.Spec.NodeName = "n1"
	r.Status.Phases = []gpuhealv1.PhaseTransition{
		{Phase: gpuhealv1.PhaseValidating, Time: metav1.NewMicroTime(t0.Add(10 * time.Second))},
		{Phase: gpuhealv1.PhaseReplacing, Time: metav1.NewMicroTime(t0.Add(21*time.Second + 300*time.Millisecond)), Message: "check nccl Failed"},
	}
	finished := metav1.NewTime(t0.Add(21 * time.Second))
	r.Status.Validation = []gpuhealv1.CheckResult{
		{Name: "nccl", Kind: gpuhealv1.CheckNCCL, Node: "n1", Outcome: gpuhealv1.CheckFailed, Value: "230.9 GB/s", Floor: "350 GB/s",
			Started: metav1.NewTime(t0.Add(12 * time.Second)), Finished: &finished, Message: "below the floor"},
		{Name: "dcgm", Kind: gpuhealv1.CheckDCGM, Node: "n1", Started: finished},
	}
	v.incidents([]gpuhealv1.NodeRemediation{r})
	v.incidents([]gpuhealv1.NodeRemediation{r})
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("printed %d lines, want 3 (validating, the check, replacing):\n%s", len(lines), out.String())
	}
	want := "check nccl (NCCL) FAILED: 230.9 GB/s, floor 350 GB/s, in 9s — below the floor"
	if !strings.Contains(lines[1], want) || !strings.Contains(lines[2], "replacing") {
		t.Errorf("lines:\n%s\nwant the check's line %q second, replacing last", out.String(), want)
	}
}

// A GPU reset prints the drain's scope once the reset is requested and the
// agent's answer once it comes, each once.
func TestDemoViewPrintsTheGPUReset(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	var out bytes.Buffer
	v := newDemoView(nil, &out, t0)
	r := gpuhealv1.NodeRemediation{ObjectMeta: metav1.ObjectMeta{Name: "n1-a"}}
	r.Spec.NodeName = "n1"
	r.Status.EvictedPods = []string{"training/inference-1"}
	requested := metav1.NewTime(t0.Add(5 * time.Second))
	r.Status.GPUReset = &gpuhealv1.GPUResetStatus{RequestID: "n1-a-reset-1", GPUs: []gpuhealv1.GPURef{{Index: 1}},
		RequestedAt: &requested, PartialDrain: true, Outcome: gpuhealv1.GPUResetRunning}
	r.Status.Phases = []gpuhealv1.PhaseTransition{
		{Phase: gpuhealv1.PhaseResetting, Time: metav1.NewMicroTime(t0.Add(5*time.Second + 100*time.Millisecond))},
	}
	v.incidents([]gpuhealv1.NodeRemediation{r})
	finished := metav1.NewTime(t0.Add(5 * time.Second))
	r.Status.GPUReset.Outcome, r.Status.GPUReset.FinishedAt = gpuhealv1.GPUResetSucceeded, &finished
	r.Status.Phases = append(r.Status.Phases, gpuhealv1.PhaseTransition{Phase: gpuhealv1.PhaseVerifying,
		Time: metav1.NewMicroTime(t0.Add(5*time.Second + 350*time.Millisecond))})
	v.incidents([]gpuhealv1.NodeRemediation{r})
	v.incidents([]gpuhealv1.NodeRemediation{r})
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("printed %d lines, want 4 (the drain, resetting, the reset, verifying):\n%s", len(lines), out.String())
	}
	if want := "partial drain: 1 pod(s) moved off GPU 1 (training/inference-1); the node stays schedulable"; !strings.Contains(lines[0], want) || !strings.Contains(lines[1], "resetting") {
		t.Errorf("lines:\n%s\nwant %q first, resetting second", out.String(), want)
	}
	// Timed by the phases, to the millisecond, and printed before the
	// phase it led to.
	if want := "reset GPU 1 SUCCEEDED in 250ms"; !strings.Contains(lines[2], want) || !strings.Contains(lines[3], "verifying") {
		t.Errorf("lines:\n%s\nwant %q third, verifying last", out.String(), want)
	}
}
