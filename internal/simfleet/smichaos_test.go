package simfleet

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuheal/gpuheal/internal/gpu/sim"
	"github.com/gpuheal/gpuheal/internal/simfleet/schedule"
)

// TestSMIChaosReadsBrokenOutputThroughTheParser: while the chaos file
// exists the agent's read goes through the real nvidia-smi backend and
// fails with an error naming what is wrong; without it, the simulated
// GPUs answer again.
func TestSMIChaosReadsBrokenOutputThroughTheParser(t *testing.T) {
	node, err := sim.New(sim.Options{NodeName: "n1", GPUs: 8})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, schedule.SMIChaosDir), 0o755); err != nil {
		t.Fatal(err)
	}
	src := newSMIChaosSource(node, dir, "n1", time.Second)
	ctx := context.Background()
	fixture, err := os.ReadFile("../gpu/smi/testdata/a100-sxm4-v12.xml")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, output, want string
	}{
		{"cut mid-document", string(fixture[:len(fixture)/2]), "EOF"},
		{"driver gone", "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n", "nvidia-smi"},
		{"no output", "", "exit status 9"},
	}
	for _, c := range cases {
		if err := os.WriteFile(filepath.Join(dir, schedule.SMIChaosDir, "n1"), []byte(c.output), 0o644); err != nil {
			t.Fatal(err)
		}
		snap, err := src.Snapshot(ctx)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: snapshot %v, error %v; want an error containing %q", c.name, snap != nil, err, c.want)
		}
	}
	if err := os.Remove(filepath.Join(dir, schedule.SMIChaosDir, "n1")); err != nil {
		t.Fatal(err)
	}
	snap, err := src.Snapshot(ctx)
	if err != nil || len(snap.GPUs) != 8 {
		t.Fatalf("after the chaos: %v GPUs, error %v; want the 8 simulated GPUs", snap, err)
	}
}
