//go:build integration

package cli

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuheal/gpuheal/internal/predict"
	"github.com/gpuheal/gpuheal/internal/predict/promsource/promsourcetest"
	"github.com/gpuheal/gpuheal/internal/predict/trace"
)

// TestModelTrainFromPrometheus trains on a simulated fleet's history
// served by a real Prometheus, with failure labels from its audit log,
// then loads and scores the model and evaluates it on the traces kept.
func TestModelTrainFromPrometheus(t *testing.T) {
	t.Parallel()
	fleet := promsourcetest.Start(t, promsourcetest.Options{GPUs: 24, GPUsPerNode: 8, Days: 1.5, Seed: 7, FailureRate: 60})
	dir := t.TempDir()
	model, saved := filepath.Join(dir, "model.json"), filepath.Join(dir, "history")
	step := fleet.Set.Manifest.Interval()
	began := time.Now()
	out, err := runCmd(t, modelCmd, "train", "--prometheus", fleet.URL, "--audit-jsonl", fleet.AuditJSONL,
		"--since", fleet.Start.Format(time.RFC3339), "--until", fleet.End.Add(-step).Format(time.RFC3339), "--step", step.String(),
		"--save-traces", saved, "--out", model, "--trees", "20", "--depth", "3")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	t.Logf("trained in %.1f s:\n%s", time.Since(began).Seconds(), out)
	failures := len(fleet.Set.Manifest.Failures)
	for _, want := range []string{"24 GPUs on 3 nodes", fmt.Sprintf("%d samples", 24*int(fleet.End.Sub(fleet.Start)/step)),
		fmt.Sprintf("%d incidents, %d failure labels", failures+1, failures), "1 KernelReady ignored", "threshold"} {
		if !strings.Contains(out, want) {
			t.Errorf("model train printed no %q", want)
		}
	}

	m, err := predict.LoadFile(model)
	if err != nil {
		t.Fatal(err)
	}
	set, err := trace.Open(saved)
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Manifest.Failures) != failures {
		t.Errorf("saved traces have %d failures, the fleet %d", len(set.Manifest.Failures), failures)
	}
	d, err := set.Decoder(0)
	if err != nil {
		t.Fatal(err)
	}
	st, top := predict.NewState(), 0.0
	for s := (predict.Sample{}); d.Next(&s) == nil; {
		r := m.Score(st.Update(&s))
		if !(r >= 0 && r <= 1) {
			t.Fatalf("score %v at %s: want a probability", r, s.Time)
		}
		top = max(top, r)
	}
	t.Logf("GPU 0: highest risk %.3f (threshold %.3f)", top, m.Threshold)

	out, err = runCmd(t, modelCmd, "eval", "--traces", saved, "--model", model)
	if err != nil || !strings.Contains(out, "precision") {
		t.Errorf("eval on the saved traces: %v\n%s", err, out)
	}
}
