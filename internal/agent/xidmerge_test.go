package agent

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/analyzer"
	"github.com/gpuheal/gpuheal/internal/finding"
	"github.com/gpuheal/gpuheal/internal/gpu"
	"github.com/gpuheal/gpuheal/internal/testproc"
	"github.com/gpuheal/gpuheal/internal/xid"
)

const xidBus = "0000:9d:00.0"

var xidT0 = time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)

// nvmlSnapshot is one GPU on the nvml backend with the given Xid events.
func nvmlSnapshot(at time.Time, evs ...gpu.XidEvent) *gpu.NodeSnapshot {
	return &gpu.NodeSnapshot{Time: at, Backend: BackendNVML, FoundGPUs: 1, GPUs: []gpu.GPUSnapshot{{
		Index: 4, UUID: "GPU-4", PCIBusID: xidBus, Name: "NVIDIA H100 80GB HBM3", XidEvents: evs,
	}}}
}

func kernelXid(code uint64, at time.Time) finding.Finding {
	return finding.Finding{Source: "kmsg", Code: "XID79", Xid: code, GPU: xidBus, Severity: finding.Fatal,
		Action: finding.ActionReboot, Time: at, Message: "NVRM: Xid (PCI:0000:9d:00): 79, GPU has fallen off the bus."}
}

// An Xid 79 that only NVML saw (no kernel log) sets the GPU condition
// False through the default rules, as the kernel log's line does.
func TestNVMLOnlyXid79MakesTheNodeUnhealthy(t *testing.T) {
	clk := clocktesting.NewFakeClock(xidT0)
	engine := analyzer.NewEngine(analyzer.DefaultRuleSet(), clk)
	m := newXidMerge(xid.Default())
	snap := nvmlSnapshot(xidT0, gpu.XidEvent{Xid: 79, Time: xidT0})
	fs := m.fromSnapshot(snap)
	if len(fs) != 1 || fs[0].Xid != 79 || fs[0].Severity != finding.Fatal || fs[0].Action != finding.ActionReboot || fs[0].GPU != xidBus {
		t.Fatalf("findings %+v, want one fatal Xid 79 (reboot) on %s", fs, xidBus)
	}
	r := engine.Evaluate(snap, fs)
	c := conditionOf(t, r, v1alpha1.ConditionGPUHealAcceleratorHealthy)
	if c.Status != analyzer.StatusFalse || c.Reason != "NvidiaXID79Error" {
		t.Fatalf("condition %+v, want False NvidiaXID79Error", c)
	}
	// Latched: the next snapshot, without the event, keeps it False.
	clk.Step(time.Minute)
	r = engine.Evaluate(nvmlSnapshot(clk.Now()), m.fromSnapshot(nvmlSnapshot(clk.Now())))
	if c := conditionOf(t, r, v1alpha1.ConditionGPUHealAcceleratorHealthy); c.Status != analyzer.StatusFalse {
		t.Fatalf("a minute later the condition is %+v, want still False", c)
	}
}

func conditionOf(t *testing.T, r analyzer.Result, typ string) analyzer.ConditionStatus {
	t.Helper()
	for _, c := range r.Conditions {
		if c.Type == typ {
			return c
		}
	}
	t.Fatalf("no %s condition in %+v", typ, r.Conditions)
	return analyzer.ConditionStatus{}
}

// The same Xid from both sources within the window is one finding,
// whichever comes first; outside it, or on another GPU or code, two.
func TestXidMergeDedupes(t *testing.T) {
	ev := func(code uint64, at time.Time) gpu.XidEvent { return gpu.XidEvent{Xid: code, Time: at} }
	t.Run("kernel first", func(t *testing.T) {
		m := newXidMerge(xid.Default())
		if !m.fromKernel(kernelXid(79, xidT0)) {
			t.Fatal("the first report was dropped")
		}
		if fs := m.fromSnapshot(nvmlSnapshot(xidT0.Add(10*time.Second), ev(79, xidT0.Add(2*time.Second)))); len(fs) != 0 {
			t.Fatalf("NVML's copy of the kernel's Xid 79 passed: %+v", fs)
		}
	})
	t.Run("nvml first", func(t *testing.T) {
		m := newXidMerge(xid.Default())
		if fs := m.fromSnapshot(nvmlSnapshot(xidT0, ev(79, xidT0))); len(fs) != 1 {
			t.Fatalf("NVML's Xid: %d findings, want 1", len(fs))
		}
		// The kernel clock may read a little behind NVML's.
		if m.fromKernel(kernelXid(79, xidT0.Add(-3*time.Second))) {
			t.Fatal("the kernel's copy of NVML's Xid 79 passed")
		}
	})
	t.Run("apart", func(t *testing.T) {
		m := newXidMerge(xid.Default())
		m.fromKernel(kernelXid(79, xidT0))
		other := nvmlSnapshot(xidT0, ev(79, xidT0.Add(xidDedupeWindow+time.Second)), ev(13, xidT0))
		other.GPUs = append(other.GPUs, gpu.GPUSnapshot{Index: 5, PCIBusID: "0000:c3:00.0", XidEvents: []gpu.XidEvent{ev(79, xidT0)}})
		if fs := m.fromSnapshot(other); len(fs) != 3 {
			t.Fatalf("later 79, another code, another GPU: %d findings %+v, want 3", len(fs), fs)
		}
	})
	t.Run("not an xid", func(t *testing.T) {
		m := newXidMerge(xid.Default())
		if !m.fromKernel(finding.Finding{Code: "SOFT_LOCKUP", Time: xidT0}) {
			t.Fatal("a finding without an Xid was dropped")
		}
	})
}

// NVML's Xids count towards the catalog's thresholds (ten Xid 13 in an
// hour escalate) and Xid 154 is judged by the event's recovery action.
func TestXidMergeClassifies(t *testing.T) {
	m := newXidMerge(xid.Default())
	e13 := xid.Default().Lookup(13)
	if e13.Threshold.Count < 2 {
		t.Fatalf("the catalog has no threshold for Xid 13 to test with: %+v", e13.Threshold)
	}
	var last finding.Finding
	for i := range e13.Threshold.Count {
		at := xidT0.Add(time.Duration(i) * time.Minute)
		fs := m.fromSnapshot(nvmlSnapshot(at, gpu.XidEvent{Xid: 13, Time: at}))
		if len(fs) != 1 {
			t.Fatalf("Xid 13 #%d: %d findings", i+1, len(fs))
		}
		if i == 0 && fs[0].Severity == finding.Fatal {
			t.Fatalf("the first Xid 13 is already fatal: %+v", fs[0])
		}
		last = fs[0]
	}
	if want, _ := e13.Escalated(); last.Severity != want {
		t.Errorf("Xid 13 #%d: severity %s, want the threshold's %s", e13.Threshold.Count, last.Severity, want)
	}
	fs := m.fromSnapshot(nvmlSnapshot(xidT0, gpu.XidEvent{Xid: 154, Time: xidT0, Data: 2}))
	if len(fs) != 1 || fs[0].Severity != finding.Fatal || fs[0].Action != finding.ActionReboot {
		t.Fatalf("Xid 154 with recovery action 2 (node reboot): %+v", fs)
	}
}

// Run hands NVML's Xids to the analyzer: a source that reports Xid 79
// only as an event makes the problem active on /metrics.
func TestRunCountsNVMLXids(t *testing.T) {
	o := validOptions()
	o.Backend = BackendNVML
	o.Interval = time.Second
	o.CallTimeout = 500 * time.Millisecond
	published := make(chan http.Handler, 1)
	src := &eventSource{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, &o, Deps{Source: src, PublishMetrics: func(h http.Handler) { published <- h }}, io.Discard, slog.New(slog.DiscardHandler))
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	h := <-published
	testproc.EventuallyTrue(t, 20*time.Second, "the xid-fatal-reboot problem on /metrics", func() bool {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		return strings.Contains(rec.Body.String(), `gpuheal_problem_active{gpu="4",rule="xid-fatal-reboot",severity="fatal"} 1`)
	})
}

// eventSource reports one GPU on the nvml backend, with Xid 79 as an
// event in its first snapshot only.
type eventSource struct {
	mu sync.Mutex
	n  int
}

func (*eventSource) Name() string { return BackendNVML }
func (*eventSource) Close() error { return nil }
func (s *eventSource) Snapshot(context.Context) (*gpu.NodeSnapshot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	now := time.Now()
	if s.n == 1 {
		return nvmlSnapshot(now, gpu.XidEvent{Xid: 79, Time: now}), nil
	}
	return nvmlSnapshot(now), nil
}
