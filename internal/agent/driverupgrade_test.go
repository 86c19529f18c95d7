package agent

import (
	"log/slog"
	"slices"
	"testing"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/finding"
	"github.com/gpuheal/gpuheal/internal/gpu"
	"github.com/gpuheal/gpuheal/internal/gpu/sim"
)

// During a GPU reset only the reset GPU's findings are dropped (the
// reset's own kernel-log lines); another GPU's fault, an Xid 79 on GPU 5
// while GPU 3 resets, still reaches the health rules. A driver upgrade
// drops everything, as before.
func TestDriverGateDropsOnlyTheResetGPUsFindings(t *testing.T) {
	src, err := sim.New(sim.Options{NodeName: "n", GPUs: 8})
	if err != nil {
		t.Fatal(err)
	}
	g := newDriverGate(src, func() (gpu.Source, error) { return src, nil }, slog.New(slog.DiscardHandler))
	var got []string
	pass := g.dropWhilePaused(func(f finding.Finding) { got = append(got, f.GPU+" "+f.Code) })
	const bus3, bus5 = "0000:5d:00.0", "0000:9a:00.0"
	xid := func(bus, code string) finding.Finding {
		return finding.Finding{GPU: bus, Code: code, Severity: finding.Fatal, Action: finding.ActionResetGPU}
	}

	reopen := g.releaseForReset([]string{bus3})
	if !g.paused() {
		t.Error("the gate is not paused during a reset: the snapshot path would read a closed backend")
	}
	pass(xid(bus3, "XID_79")) // the reset's artefact
	pass(xid(bus5, "XID_79")) // another GPU's own fault
	pass(xid("", "NODE"))     // not tied to a GPU: kept
	reopen()
	pass(xid(bus3, "XID_48")) // after the reset: counts again
	want := []string{bus5 + " XID_79", " NODE", bus3 + " XID_48"}
	if !slices.Equal(got, want) {
		t.Errorf("passed %q during and after the reset, want %q", got, want)
	}

	got = nil
	g.setState(v1alpha1.DriverUpgradeDrainRequired)
	pass(xid(bus5, "XID_79"))
	pass(xid("", "NODE"))
	g.setState("")
	pass(xid(bus5, "XID_31"))
	if want := []string{bus5 + " XID_31"}; !slices.Equal(got, want) {
		t.Errorf("passed %q around a driver upgrade, want %q", got, want)
	}
}
