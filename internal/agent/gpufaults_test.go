package agent

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
	clocktesting "k8s.io/utils/clock/testing"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/analyzer"
	"github.com/gpuheal/gpuheal/internal/finding"
	"github.com/gpuheal/gpuheal/internal/gpu"
	"github.com/gpuheal/gpuheal/internal/podresources"
	"github.com/gpuheal/gpuheal/internal/podresources/podresourcestest"
)

func fourGPUs() *gpu.NodeSnapshot {
	s := &gpu.NodeSnapshot{}
	for i, bus := range []string{"0000:1b:00.0", "0000:3b:00.0", "0000:5d:00.0", "0000:9a:00.0"} {
		s.GPUs = append(s.GPUs, gpu.GPUSnapshot{Index: i, UUID: "GPU-" + string(rune('a'+i)) + "0000000-0000-0000-0000-000000000000", PCIBusID: bus})
	}
	return s
}

func problem(g *gpu.NodeSnapshot, index int, sev finding.Severity, code string, a finding.Action) analyzer.Problem {
	p := analyzer.Problem{Severity: sev, Code: code, Action: a, Reason: "R" + code}
	if index >= -1 {
		ref := &analyzer.GPURef{Index: index}
		if index >= 0 {
			ref.UUID, ref.PCIBusID = g.GPUs[index].UUID, g.GPUs[index].PCIBusID
		}
		p.GPU = ref
	}
	return p
}

// TestFaultyGPUs: only fatal problems of a GPU the snapshot has, whose
// action takes the GPU out, make a faulty GPU; the worst problem names it
// and the strongest action wins.
func TestFaultyGPUs(t *testing.T) {
	t.Parallel()
	s := fourGPUs()
	r := analyzer.Result{Problems: []analyzer.Problem{
		problem(s, 3, finding.Fatal, "XID79", finding.ActionReplace),
		problem(s, 1, finding.Fatal, "DBE", finding.ActionResetGPU),
		problem(s, 1, finding.Fatal, "ROW_REMAP_FAILURE", finding.ActionReboot),
		problem(s, 2, finding.Warning, "SBE", finding.ActionResetGPU),   // a warning keeps the node healthy
		problem(s, 0, finding.Fatal, "XID13", finding.ActionRestartApp), // the app's fault, not the GPU's
		problem(s, -1, finding.Fatal, "XID79", finding.ActionReplace),   // a GPU the snapshot lacks
		problem(s, -2, finding.Fatal, "KERNEL_OOPS", finding.ActionReboot),
	}}
	got := faultyGPUs(s, r)
	want := []v1alpha1.GPUFault{
		{GPURef: v1alpha1.GPURef{Index: 1, UUID: s.GPUs[1].UUID, BusID: "00000000:3B:00.0"}, Reason: "DBE", Action: "reboot"},
		{GPURef: v1alpha1.GPURef{Index: 3, UUID: s.GPUs[3].UUID, BusID: "00000000:9A:00.0"}, Reason: "XID79", Action: "replace"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("faultyGPUs (-want +got):\n%s", d)
	}
}

type failingLister struct{ calls int }

func (f *failingLister) List(context.Context) (*podresourcesv1.ListPodResourcesResponse, error) {
	f.calls++
	return nil, errors.New("pod-resources List at /x: no answer within 5s")
}

// TestGPUFaultReporter asks the kubelet only for a faulty node, again when
// the faulty GPUs change or the answer is podsRefresh old, and reports an
// unreadable kubelet as Unknown pods.
func TestGPUFaultReporter(t *testing.T) {
	t.Parallel()
	srv := podresourcestest.Start(t)
	s := fourGPUs()
	srv.SetPods(podresourcestest.Pod("ml", "a", "nvidia.com/gpu", s.GPUs[1].UUID),
		podresourcestest.Pod("ml", "b", "nvidia.com/gpu", s.GPUs[2].UUID))
	clk := clocktesting.NewFakeClock(time.Date(2026, 12, 1, 11, 0, 0, 0, time.UTC))
	var shown *v1alpha1.GPUFaultReport
	g := &gpuFaultReporter{pods: podresources.NewClient(srv.Socket, time.Second), clk: clk, log: slog.New(slog.DiscardHandler),
		set:   func(r *v1alpha1.GPUFaultReport) error { shown = r; return nil },
		reads: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "reads"}, []string{"result"}), invalidate: func() {}}
	ctx := context.Background()

	g.observe(ctx, s, analyzer.Result{})
	if shown != nil || srv.Lists() != 0 {
		t.Fatalf("healthy node: report %v after %d List calls, want none and none", shown, srv.Lists())
	}
	sick := analyzer.Result{Problems: []analyzer.Problem{problem(s, 1, finding.Fatal, "DBE", finding.ActionResetGPU)}}
	g.observe(ctx, s, sick)
	g.observe(ctx, s, sick)
	if srv.Lists() != 1 || shown == nil || len(shown.GPUs) != 1 {
		t.Fatalf("faulty GPU 1: %d List calls, report %+v; want 1 call and GPU 1", srv.Lists(), shown)
	}
	if f := shown.GPUs[0]; f.Sharing != v1alpha1.GPUSharingExclusive || cmp.Diff([]string{"ml/a"}, f.Pods) != "" {
		t.Errorf("GPU 1 = %+v, want Exclusive with ml/a", f)
	}
	clk.Step(podsRefresh)
	g.observe(ctx, s, sick)
	if srv.Lists() != 2 {
		t.Errorf("%d List calls after podsRefresh, want 2", srv.Lists())
	}
	sick.Problems = append(sick.Problems, problem(s, 2, finding.Fatal, "XID95", finding.ActionResetGPU))
	g.observe(ctx, s, sick)
	if srv.Lists() != 3 || len(shown.GPUs) != 2 || cmp.Diff([]string{"ml/b"}, shown.GPUs[1].Pods) != "" {
		t.Errorf("second faulty GPU: %d List calls, report %+v; want 3 calls and ml/b on GPU 2", srv.Lists(), shown)
	}
	g.observe(ctx, s, analyzer.Result{})
	if shown != nil {
		t.Errorf("recovered node still reports %+v", shown)
	}

	bad := &failingLister{}
	g.pods, g.readFor = bad, ""
	g.observe(ctx, s, sick)
	if f := shown.GPUs[0]; bad.calls != 1 || f.Sharing != v1alpha1.GPUSharingUnknown || f.PodsError != "pod-resources List at /x: no answer within 5s: the whole node is drained" {
		t.Errorf("unreadable kubelet: GPU 1 = %+v", f)
	}
	if ok, bad := testutil.ToFloat64(g.reads.WithLabelValues("ok")), testutil.ToFloat64(g.reads.WithLabelValues("error")); ok != 3 || bad != 1 {
		t.Errorf("reads counted ok=%v error=%v, want 3 and 1", ok, bad)
	}
	g.pods, g.readFor = nil, ""
	g.observe(ctx, s, sick)
	if f := shown.GPUs[0]; f.Sharing != v1alpha1.GPUSharingUnknown || f.PodsError == "" {
		t.Errorf("socket off: GPU 1 = %+v, want Unknown with the reason", f)
	}
}

// A GPU in MIG mode is MIG even when the kubelet lists a whole-GPU ID.
func TestWithPodsMIGMode(t *testing.T) {
	t.Parallel()
	s := fourGPUs()
	on := true
	s.GPUs[1].MIGEnabled = &on
	got := withPods([]v1alpha1.GPUFault{{GPURef: v1alpha1.GPURef{Index: 1}}}, s,
		map[int]podresources.Holding{1: {Pods: []string{"ml/a"}, Sharing: podresources.SharingExclusive}}, nil)
	if got[0].Sharing != v1alpha1.GPUSharingMIG {
		t.Errorf("GPU in MIG mode = %+v, want MIG", got[0])
	}
}
