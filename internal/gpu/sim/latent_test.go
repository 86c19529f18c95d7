package sim

import (
	"strings"
	"testing"
	"time"

	"github.com/gpuheal/gpuheal/internal/gpu"
)

// A latent fault reads clean: the snapshot and kernel log are the same as
// a healthy node's, before and after a reboot (Reset), and it stays.
func TestLatentFaultStaysPassiveAndSurvivesReboot(t *testing.T) {
	healthy, _ := newTestNode(t, Options{NodeName: "n"})
	sick, _ := newTestNode(t, Options{NodeName: "n"})
	if err := sick.Inject(Fault{Kind: KindLatent, GPU: 3, Params: map[string]string{"mode": "nccl-bandwidth", "factor": "0.5"}}); err != nil {
		t.Fatal(err)
	}
	if a, b := string(snapshotJSON(t, healthy)), string(snapshotJSON(t, sick)); a != b {
		t.Fatal("a latent fault changed the passive snapshot")
	}
	if recs := sick.KernelLog(0); len(recs) != 0 {
		t.Fatalf("a latent fault logged %v", logLines(recs))
	}
	sick.Reset()
	if sick.latent[3] == nil || sick.latent[3].factor != 0.5 {
		t.Fatal("the latent fault did not survive the reboot")
	}
	if err := sick.Clear(3, KindLatent); err != nil || sick.latent[3] == nil {
		t.Fatalf("clearing a latent fault: %v (only a new board removes it)", err)
	}
}

// surface-after counts only time under workload; then the fault shows as
// its passive fault, once per boot, and again after a reboot and as much
// load as before.
func TestLatentFaultSurfacesAfterLoad(t *testing.T) {
	n, clk := newTestNode(t, Options{NodeName: "n"})
	if err := n.Inject(Fault{Kind: KindLatent, GPU: 2, Params: map[string]string{"mode": "dcgm-memory", "surface-after": "30m"}}); err != nil {
		t.Fatal(err)
	}
	uncorrected := func() uint64 { return *snapshot(t, n).GPUs[2].ECC.VolatileUncorrected }
	clk.Step(2 * time.Hour) // idle: no load
	if uncorrected() != 0 {
		t.Fatal("the fault surfaced without load")
	}
	n.SetBusy(true)
	clk.Step(20 * time.Minute)
	n.SetBusy(false)
	clk.Step(time.Hour)
	if got := n.LatentLoad(2); got != 20*time.Minute || uncorrected() != 0 {
		t.Fatalf("after 20m of load: load %v, uncorrected %d", got, uncorrected())
	}
	n.SetBusy(true)
	clk.Step(10 * time.Minute)
	if uncorrected() != 1 {
		t.Fatal("after 30m of load the latent memory fault did not surface as a double-bit error")
	}
	if !strings.Contains(n.KernelLog(0)[0].Message, ": 48, ") {
		t.Fatalf("surfacing logged %v, want Xid 48", logLines(n.KernelLog(0)))
	}
	clk.Step(time.Hour)
	if uncorrected() != 1 || n.SurfaceLatent(2) != nil || uncorrected() != 1 {
		t.Fatal("the fault surfaced twice in one boot")
	}
	if got := n.SurfacedLatent(); len(got) != 1 || got[0] != 2 {
		t.Fatalf("surfaced GPUs %v, want [2]", got)
	}
	n.Reset()
	if uncorrected() != 0 || n.LatentLoad(2) != 0 || len(n.SurfacedLatent()) != 0 {
		t.Fatal("the reboot did not start the board's boot afresh")
	}
	if n.SurfaceLatent(0) == nil {
		t.Fatal("GPU 0 has no latent fault to surface")
	}
	n.SetBusy(true)
	clk.Step(30 * time.Minute)
	if uncorrected() != 1 {
		t.Fatal("after the reboot and 30m of load the fault did not surface again")
	}
}

// The nccl-bandwidth and dcgm-diagnostic modes surface as Xid 79 unless
// told otherwise.
func TestLatentFaultSurfacesAsFellOffBus(t *testing.T) {
	n, clk := newTestNode(t, Options{NodeName: "n"})
	if err := n.Inject(Fault{Kind: KindLatent, GPU: 1, Params: map[string]string{"mode": "dcgm-diagnostic", "surface-after": "1m"}}); err != nil {
		t.Fatal(err)
	}
	n.SetBusy(true)
	clk.Step(time.Minute)
	s := snapshot(t, n)
	if !s.GPUs[1].Missing || len(s.GPUs[1].XidEvents) != 1 || s.GPUs[1].XidEvents[0].Xid != 79 {
		t.Fatalf("GPU 1 after surfacing: missing %v, xids %v", s.GPUs[1].Missing, s.GPUs[1].XidEvents)
	}
	var _ gpu.Source = n
}

func TestLatentFaultParams(t *testing.T) {
	for _, tc := range []struct {
		params map[string]string
		want   string
	}{
		{nil, `param "mode": required`},
		{map[string]string{"mode": "slow"}, `bad value "slow": want one of nccl-bandwidth, dcgm-memory, dcgm-diagnostic`},
		{map[string]string{"mode": "nccl-bandwidth", "factor": "1.5"}, `param "factor": bad value "1.5": want 0.01–0.99`},
		{map[string]string{"mode": "dcgm-memory", "factor": "0.5"}, "only mode nccl-bandwidth takes a factor"},
		{map[string]string{"mode": "dcgm-memory", "surface-after": "soon"}, `param "surface-after": bad value "soon"`},
		{map[string]string{"mode": "dcgm-memory", "surface": "xid"}, "want fell-off-bus or dbe"},
		{map[string]string{"mode": "dcgm-memory", "speed": "1"}, `unknown param "speed"`},
	} {
		err := Fault{Kind: KindLatent, Params: tc.params}.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want an error containing %q", tc.params, err, tc.want)
		}
	}
	if err := (Fault{Kind: KindLatent, GPU: 7, Params: map[string]string{"mode": "nccl-bandwidth", "factor": "0.6", "surface-after": "45m", "surface": "dbe"}}).Validate(); err != nil {
		t.Fatal(err)
	}
}

// A schedule file plants latent faults like any other.
func TestLatentFaultInSchedule(t *testing.T) {
	s, err := LoadSchedule(strings.NewReader(`
- at: 1m
  node: node-a
  gpu: 5
  fault: latent
  params: {mode: nccl-bandwidth, factor: 0.6, surface-after: 2h}
`))
	if err != nil {
		t.Fatal(err)
	}
	n, clk := newTestNode(t, Options{NodeName: "node-a", Schedule: s})
	clk.Step(time.Minute)
	snapshot(t, n)
	if n.latent[5] == nil || n.latent[5].surfaceAfter != 2*time.Hour {
		t.Fatalf("the scheduled latent fault is %+v", n.latent[5])
	}
}
