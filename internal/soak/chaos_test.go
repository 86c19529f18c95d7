package soak

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gpuheal/gpuheal/internal/simfleet/schedule"
)

// TestBrokenSMIIsUndone: the chaos puts broken nvidia-smi output in place
// for agents whose kernel logs exist, and takes it all away when it ends.
func TestBrokenSMIIsUndone(t *testing.T) {
	r := &run{workDir: t.TempDir(), log: slog.New(slog.DiscardHandler), opts: Options{Seed: 3}}
	if err := os.MkdirAll(r.simFleetDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"gpu-node-0001.ab.0.kmsg", "gpu-node-0002.ab.1.kmsg"} {
		if err := os.WriteFile(filepath.Join(r.simFleetDir(), n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m := newChaos(r)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.brokenSMI(ctx) }()

	dir := filepath.Join(r.simFleetDir(), schedule.SMIChaosDir)
	deadline := time.Now().Add(10 * time.Second)
	var names []string
	for len(names) == 0 && time.Now().Before(deadline) {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			names = append(names, e.Name())
		}
		time.Sleep(10 * time.Millisecond) // polling the directory, with a deadline
	}
	for _, n := range names {
		if n != "gpu-node-0001" && n != "gpu-node-0002" {
			t.Errorf("broken output for %q, which is not a node of the fleet", n)
		}
	}
	if len(names) == 0 {
		t.Fatal("no broken nvidia-smi output was put in place")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("broken output left behind after the chaos ended: %v", err)
	}
}
