package predictor

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/gpuheal/gpuheal/internal/detect"
	"github.com/gpuheal/gpuheal/internal/finding"
	"github.com/gpuheal/gpuheal/internal/gpu"
	"github.com/gpuheal/gpuheal/internal/gpu/sim"
	"github.com/gpuheal/gpuheal/internal/predict"
	"github.com/gpuheal/gpuheal/internal/xid"
)

func TestXidPairsCountEachEventOnce(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	const bus, other = "0000:18:00.0", "0000:2a:00.0"
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	ev := func(code uint64, s int) gpu.XidEvent { return gpu.XidEvent{Xid: code, Time: at(s)} }
	kx := func(code uint32, s int, b string) kernelXid { return kernelXid{code: code, at: at(s), bus: b} }
	type sample struct {
		now    int
		events []gpu.XidEvent
		kernel []kernelXid
		want   []uint32
	}
	for _, tc := range []struct {
		name    string
		samples []sample
	}{
		{"backend only", []sample{{10, []gpu.XidEvent{ev(13, 5), ev(13, 6)}, nil, []uint32{13, 13}}}},
		{"kernel only", []sample{{10, nil, []kernelXid{kx(79, 5, bus)}, []uint32{79}}}},
		{"both in one sample", []sample{{10, []gpu.XidEvent{ev(119, 5)}, []kernelXid{kx(119, 5, bus)}, []uint32{119}}}},
		{"kernel first, backend a sample later", []sample{
			{10, nil, []kernelXid{kx(119, 5, bus)}, []uint32{119}},
			{40, []gpu.XidEvent{ev(119, 6)}, nil, nil},
		}},
		{"backend first, kernel a sample later", []sample{
			{10, []gpu.XidEvent{ev(48, 5)}, nil, []uint32{48}},
			{40, nil, []kernelXid{kx(48, 5, bus)}, nil},
		}},
		{"a storm both see counts once per event", []sample{
			{10, []gpu.XidEvent{ev(13, 1), ev(13, 2), ev(13, 3)}, []kernelXid{kx(13, 1, bus), kx(13, 2, bus), kx(13, 3, bus)}, []uint32{13, 13, 13}},
		}},
		{"codes do not pair across", []sample{{10, []gpu.XidEvent{ev(13, 5)}, []kernelXid{kx(31, 5, bus)}, []uint32{13, 31}}}},
		{"another GPU's kernel Xid", []sample{{10, []gpu.XidEvent{ev(13, 5)}, []kernelXid{kx(13, 5, other)}, []uint32{13}}}},
		{"outside the window: two events", []sample{
			{10, []gpu.XidEvent{ev(13, 5)}, nil, []uint32{13}},
			{200, nil, []kernelXid{kx(13, 190, bus)}, []uint32{13}},
		}},
		{"an unread backend time counts as the sample's", []sample{
			{10, []gpu.XidEvent{{Xid: 13}}, []kernelXid{kx(13, 9, bus)}, []uint32{13}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p xidPairs
			for i, s := range tc.samples {
				got := p.merge(at(s.now), xidPairWindow+30*time.Second, s.events, s.kernel, bus, nil)
				if !slices.Equal(got, s.want) {
					t.Errorf("sample %d: Xids %v, want %v", i, got, s.want)
				}
			}
		})
	}
}

// The sim reports an Xid both ways, as NVML and the kernel log do on a
// node: the predictor fed both must score exactly as one fed the backend's
// events alone, and as one fed the kernel log alone (the smi backend);
// one fed neither must score differently (the Xids matter to the model).
func TestPredictorCountsKernelAndBackendXidsOnce(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))
	node, err := sim.New(sim.Options{GPUs: 8, Seed: 1, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	pm := defaultPredictorModel(t)
	log := slog.New(slog.DiscardHandler)
	backend, both, kernel, neither := New(pm, predict.Interval, log), New(pm, predict.Interval, log),
		New(pm, predict.Interval, log), New(pm, predict.Interval, log)
	det := detect.New(xid.Default(), detect.Options{Now: clk.Now})
	var seq uint64
	var got [4][]float64
	for i := range 60 {
		if i >= 5 && i%4 == 1 { // GSP timeouts every two minutes
			if err := node.Inject(sim.Fault{Kind: sim.KindXid, GPU: 2, Params: map[string]string{"code": "119"}}); err != nil {
				t.Fatal(err)
			}
		}
		for _, rec := range node.KernelLog(seq) {
			seq = rec.Seq + 1
			for _, f := range det.Detect(rec.Message, clk.Now()) {
				both.AddFinding(f)
				kernel.AddFinding(f)
			}
		}
		snap, err := node.Snapshot(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		backend.Observe(snap)
		both.Observe(snap)
		for j := range snap.GPUs {
			snap.GPUs[j].XidEvents = nil
		}
		kernel.Observe(snap)
		neither.Observe(snap)
		for k, p := range []*Predictor{backend, both, kernel, neither} {
			got[k] = append(got[k], p.lastRisks()[2].risk)
		}
		clk.Step(predict.Interval)
	}
	if !slices.Equal(got[1], got[0]) {
		t.Errorf("backend and kernel log: risks\n%.4f\nwant the backend's alone\n%.4f", got[1], got[0])
	}
	if !slices.Equal(got[2], got[0]) {
		t.Errorf("kernel log alone: risks\n%.4f\nwant the backend's\n%.4f", got[2], got[0])
	}
	if slices.Equal(got[3], got[0]) {
		t.Errorf("without any Xid the risks are the same as with them: the Xids were not counted")
	}
}

// Kernel-log Xids from before the agent started (the ring's backlog, the
// replayed journal) are history, not news.
func TestPredictorDropsOldKernelXids(t *testing.T) {
	p := New(defaultPredictorModel(t), 10*time.Second, slog.New(slog.DiscardHandler))
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	p.AddFinding(xidFinding(79, "0000:18:00.0", now.Add(-time.Hour)))
	p.AddFinding(xidFinding(79, "0000:18:00.0", now.Add(-5*time.Second)))
	p.AddFinding(xidFinding(0, "0000:18:00.0", now)) // not an Xid
	p.mu.Lock()
	kernel := p.kernel
	p.mu.Unlock()
	got := p.recent(now, kernel)
	if len(got) != 1 || !got[0].at.Equal(now.Add(-5*time.Second)) {
		t.Fatalf("recent kernel Xids %+v, want only the one from 5 s ago", got)
	}
}

func xidFinding(code uint64, bus string, at time.Time) finding.Finding {
	return finding.Finding{Source: "kmsg", Code: "XID", Xid: code, GPU: bus, Severity: finding.Warning, Time: at}
}
