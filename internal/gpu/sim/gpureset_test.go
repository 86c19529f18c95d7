package sim

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gpuheal/gpuheal/internal/gpu"
)

// resetGPU resets GPU i as the agent's procedure does: persistence mode
// off, reset, persistence mode on.
func resetGPU(t *testing.T, n *Node, i int) string {
	t.Helper()
	ctx := context.Background()
	bus := n.gpus[i].bus
	if err := n.SetPersistenceMode(ctx, bus, false); err != nil {
		t.Fatalf("persistence off: %v", err)
	}
	out, failed, err := n.ResetGPU(ctx, "0000"+strings.ToUpper(bus))
	if err != nil || failed {
		t.Fatalf("reset of GPU %d: %q failed=%v err=%v", i, out, failed, err)
	}
	if err := n.SetPersistenceMode(ctx, bus, true); err != nil {
		t.Fatalf("persistence on: %v", err)
	}
	return out
}

// A reset clears what a real reset clears and keeps what it does not.
func TestResetGPUClearsVolatileState(t *testing.T) {
	n, _ := newTestNode(t, Options{NodeName: "n"})
	for _, f := range []Fault{
		{Kind: KindDBE, GPU: 3, Params: map[string]string{"count": "2"}},
		{Kind: KindSBE, GPU: 3, Params: map[string]string{"count": "5"}},
		{Kind: KindXid, GPU: 3, Params: map[string]string{"code": "94"}},
		{Kind: KindRecoveryAction, GPU: 3, Params: map[string]string{"action": "drain-and-reset"}},
		{Kind: KindRowRemapPending, GPU: 3},
		{Kind: KindNVLinkDown, GPU: 3, Params: map[string]string{"link": "2"}},
		{Kind: KindDBE, GPU: 5},
	} {
		if err := n.Inject(f); err != nil {
			t.Fatalf("inject %v: %v", f, err)
		}
	}
	before := snapshot(t, n).GPUs[3]
	out := resetGPU(t, n, 3)
	if out != "GPU 00000000:5D:00.0 was successfully reset.\n" {
		t.Errorf("reset printed %q", out)
	}
	s := snapshot(t, n)
	g := s.GPUs[3]
	if *g.ECC.VolatileUncorrected != 0 || *g.ECC.VolatileCorrected != 0 {
		t.Errorf("volatile ECC %d/%d after the reset, want 0", *g.ECC.VolatileCorrected, *g.ECC.VolatileUncorrected)
	}
	if *g.ECC.AggregateUncorrected != *before.ECC.AggregateUncorrected || *g.ECC.AggregateUncorrected != 2 {
		t.Errorf("aggregate uncorrected %d, want it kept (2)", *g.ECC.AggregateUncorrected)
	}
	if *g.ResetRequired || *g.DrainAndResetRecommended || *g.RecoveryAction != gpu.RecoveryNone {
		t.Errorf("recovery state after the reset: reset required %v, drain and reset %v, action %v", *g.ResetRequired, *g.DrainAndResetRecommended, *g.RecoveryAction)
	}
	if g.RemappedRows.Pending || g.RemappedRows.Uncorrectable != 1 {
		t.Errorf("rows %+v: want the pending remap applied and the remapped row kept", *g.RemappedRows)
	}
	if !g.NVLink[2].Active || g.XidTotals[94] != 1 || g.UUID != before.UUID {
		t.Errorf("link 2 active %v, Xid 94 total %d, UUID %s: want retrained, history kept, same GPU", g.NVLink[2].Active, g.XidTotals[94], g.UUID)
	}
	if !*g.PersistenceMode {
		t.Error("persistence mode off after it was turned on again")
	}
	if *s.GPUs[5].ECC.VolatileUncorrected != 1 {
		t.Error("resetting GPU 3 cleared GPU 5")
	}
	if n.GPUResets(3) != 1 || n.GPUResets(5) != 0 {
		t.Errorf("reset counts %d, %d; want 1, 0", n.GPUResets(3), n.GPUResets(5))
	}
}

// Older GPUs retire pages: a pending retirement becomes retired, and the
// retired pages stay.
func TestResetGPURetiresPendingPages(t *testing.T) {
	n, _ := newTestNode(t, Options{NodeName: "n", Model: "V100-SXM2-32GB"})
	if err := n.Inject(Fault{Kind: KindRetiredPages, GPU: 1, Params: map[string]string{"dbe": "2"}}); err != nil {
		t.Fatal(err)
	}
	resetGPU(t, n, 1)
	rp := snapshot(t, n).GPUs[1].RetiredPages
	if rp.Pending || rp.DoubleBit != 2 {
		t.Errorf("retired pages %+v: want retired (not pending), 2 kept", *rp)
	}
}

// What the sim refuses, it says as nvidia-smi does: persistence mode on
// (the daemon is a client), a GPU fallen off the bus, no GPU at the bus.
func TestResetGPURefusals(t *testing.T) {
	n, _ := newTestNode(t, Options{NodeName: "n"})
	ctx := context.Background()
	bus := n.gpus[2].bus
	if out, failed, _ := n.ResetGPU(ctx, bus); !failed || !strings.Contains(out, "In use by another client") {
		t.Errorf("reset with persistence mode on: %q failed=%v", out, failed)
	}
	if err := n.Inject(Fault{Kind: KindFellOffBus, GPU: 2}); err != nil {
		t.Fatal(err)
	}
	if err := n.SetPersistenceMode(ctx, bus, false); err == nil {
		t.Error("persistence mode set on a lost GPU")
	}
	if out, failed, _ := n.ResetGPU(ctx, bus); !failed || !strings.Contains(out, "GPU is lost") {
		t.Errorf("reset of a lost GPU: %q failed=%v", out, failed)
	}
	if out, failed, _ := n.ResetGPU(ctx, "0000:ff:00.0"); !failed || !strings.Contains(out, "No devices were found") {
		t.Errorf("reset at no GPU: %q failed=%v", out, failed)
	}
	if n.GPUResets(2) != 0 {
		t.Error("a refused reset counted")
	}
}

// A latent fault is the board's: a reset clears the fault it surfaced as,
// and it comes back after the same load again.
func TestResetGPUKeepsLatentFault(t *testing.T) {
	n, clk := newTestNode(t, Options{NodeName: "n"})
	if err := n.Inject(Fault{Kind: KindLatent, GPU: 2, Params: map[string]string{"mode": "dcgm-memory", "surface-after": "30m"}}); err != nil {
		t.Fatal(err)
	}
	uncorrected := func() uint64 { return *snapshot(t, n).GPUs[2].ECC.VolatileUncorrected }
	n.SetBusy(true)
	clk.Step(31 * time.Minute)
	if uncorrected() != 1 {
		t.Fatal("the latent fault did not surface")
	}
	resetGPU(t, n, 2)
	if uncorrected() != 0 {
		t.Fatal("the reset left the surfaced error")
	}
	clk.Step(20 * time.Minute)
	if uncorrected() != 0 || n.LatentLoad(2) != 20*time.Minute {
		t.Fatalf("20m after the reset: uncorrected %d, load %v; want 0 and the load counted from the reset", uncorrected(), n.LatentLoad(2))
	}
	clk.Step(11 * time.Minute)
	if uncorrected() != 1 {
		t.Error("the latent fault did not come back after the reset")
	}
}
