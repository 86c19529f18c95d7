//go:build integration

package soak

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuheal/gpuheal/internal/soak"
	"github.com/gpuheal/gpuheal/internal/testenv"
	"github.com/gpuheal/gpuheal/internal/testenv/testcluster"
	"github.com/gpuheal/gpuheal/internal/testproc"
)

// TestSoakShort is the short soak of `make test`: a few minutes of fleet
// life with faults and chaos on 30 nodes; every invariant must hold. The
// long run is `make soak` (docs/reliability.md).
func TestSoakShort(t *testing.T) {
	t.Parallel()
	binDir := testcluster.RequireBinaries(t, true, true)
	ownBin := t.TempDir()
	for _, name := range []string{"gpuheal-agent", "gpuheal-controller"} {
		if err := testenv.GoBuild(filepath.Join(ownBin, name), "github.com/gpuheal/gpuheal/cmd/"+name); err != nil {
			t.Fatal(err)
		}
	}
	workDir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	var out strings.Builder
	rep, err := soak.Run(ctx, soak.Options{
		Nodes: 30, Duration: 2 * time.Minute, Speed: 6, Seed: 7, Mode: soak.Live, Chaos: true,
		FaultsPerMinute: 0.5, ChaosEvery: 15 * time.Second, Quiesce: 6 * time.Minute,
		BinDir: binDir, OwnBinDir: ownBin, WorkDir: workDir,
		Out: &out, Log: slog.New(slog.NewTextHandler(&out, nil)),
	})
	if err != nil {
		t.Fatalf("soak: %v\n%s", err, out.String())
	}
	var report strings.Builder
	rep.Print(&report)
	t.Log("\n" + report.String())
	if rep.Failed() {
		for _, f := range []string{"gpuheal-controller-0.log", "gpuheal-controller-1.log"} {
			b, _ := os.ReadFile(filepath.Join(workDir, f))
			t.Logf("%s (last 3000 bytes):\n%s", f, testproc.Tail(b, 3000))
		}
		t.Fatal("an invariant broke")
	}
	chaos := 0
	for _, n := range rep.Chaos {
		chaos += n
	}
	if rep.FatalInjected == 0 || rep.Remediations["Succeeded"] == 0 || chaos < 3 {
		t.Fatalf("the run proved little: %d fatal faults, %d remediations succeeded, %d chaos actions", rep.FatalInjected, rep.Remediations["Succeeded"], chaos)
	}
}
