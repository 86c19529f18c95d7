package soak

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gpuhealv1 "github.com/gpuheal/gpuheal/api/v1alpha1"
)

// The reset figures count only incidents with advice reset-gpu: a reset
// after a partial drain takes its GPUs out, a reboot (or a reset after a
// whole-node drain) the whole board; a failed reset is counted by reason.
func TestResetFigures(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	advice := func(r gpuhealv1.NodeRemediation) gpuhealv1.NodeRemediation {
		r.Spec.Trigger.Since = metav1.NewTime(t0)
		r.Spec.Trigger.RecommendedAction = "reset-gpu"
		return r
	}
	reset := advice(incident("n1-a", "n1", t0, t0.Add(6*time.Minute), gpuhealv1.PhaseSucceeded))
	reset.Status.Action = gpuhealv1.ActionResetGPU
	reset.Status.EvictedPods = []string{"training/inference-1"}
	reset.Status.GPUReset = &gpuhealv1.GPUResetStatus{GPUs: []gpuhealv1.GPURef{{Index: 1}}, PartialDrain: true, Outcome: gpuhealv1.GPUResetSucceeded}
	failed := advice(incident("n2-a", "n2", t0, t0.Add(12*time.Minute), gpuhealv1.PhaseSucceeded))
	failed.Status.Action = gpuhealv1.ActionReboot // escalated
	failed.Status.EvictedPods = []string{"a/1", "a/2", "a/3"}
	failed.Status.GPUReset = &gpuhealv1.GPUResetStatus{GPUs: []gpuhealv1.GPURef{{Index: 2}}, PartialDrain: true,
		Outcome: gpuhealv1.GPUResetFailed, Reason: gpuhealv1.ResetReasonNotFound}
	reboot := advice(incident("n3-a", "n3", t0, t0.Add(3*time.Minute), gpuhealv1.PhaseFailed))
	reboot.Status.Action = gpuhealv1.ActionReboot
	other := incident("n4-a", "n4", t0, t0.Add(time.Hour), gpuhealv1.PhaseSucceeded) // advice reboot: not counted

	f := resetFigures([]gpuhealv1.NodeRemediation{reset, failed, reboot, other}, 2)
	if f.Incidents != 3 || f.RebootsAvoided != 1 {
		t.Errorf("incidents %d, reboots avoided %d; want 3, 1", f.Incidents, f.RebootsAvoided)
	}
	if f.Resets["Succeeded"] != 1 || f.Resets["Failed/GPUNotFound"] != 1 || len(f.Resets) != 2 {
		t.Errorf("resets %v, want one Succeeded and one Failed/GPUNotFound", f.Resets)
	}
	// Speed 2: 6 minutes of run are 12 of fleet time.
	if len(f.TimeToRecover) != 2 || f.TimeToRecover[0] != 12*time.Minute || f.TimeToRecover[1] != 24*time.Minute {
		t.Errorf("times to recover %v, want [12m 24m] (the failed incident has none)", f.TimeToRecover)
	}
	if len(f.PodsEvicted) != 2 || f.PodsEvicted[0] != 1 || f.PodsEvicted[1] != 3 {
		t.Errorf("pods evicted %v, want [1 3]", f.PodsEvicted)
	}
	// 1 GPU × 12 min + 8 × 24 min + 8 × 6 min = 0.2 + 3.2 + 0.8 GPU-hours.
	if want := 4.2; f.GPUHoursOut < want-1e-9 || f.GPUHoursOut > want+1e-9 {
		t.Errorf("GPU-hours out %.4f, want %.1f", f.GPUHoursOut, want)
	}
}
