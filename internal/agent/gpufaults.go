package agent

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/agent/exporter"
	"github.com/gpuheal/gpuheal/internal/analyzer"
	"github.com/gpuheal/gpuheal/internal/finding"
	"github.com/gpuheal/gpuheal/internal/gpu"
	"github.com/gpuheal/gpuheal/internal/podresources"
)

// podsRefresh is how old the pods of a faulty GPU may get before the
// kubelet is asked again: a pod scheduled onto it (the device plugin does
// not mark every faulty GPU unhealthy) shows in the report within it. A
// changed set of faulty GPUs asks at once. A healthy node never asks.
const podsRefresh = 30 * time.Second

// gpuFaultReporter builds the GPU fault report (v1alpha1.AnnotationGPUFaults)
// from each evaluation, reading the pods that hold the faulty GPUs from
// the kubelet's PodResources API. It runs on the health loop, before the
// conditions are set, so the report is on the Node before the condition
// that makes a controller act.
type gpuFaultReporter struct {
	pods podresources.Lister // nil: --pod-resources-socket ""
	clk  clock.Clock
	log  *slog.Logger
	set  func(*v1alpha1.GPUFaultReport) error
	// reads counts the kubelet's answers by result; invalidate has the
	// next scrape show them.
	reads      *prometheus.CounterVec
	invalidate func()

	readFor  string // the faulty GPUs the last read was for
	readAt   time.Time
	holdings map[int]podresources.Holding
	readErr  error
}

// startGPUFaults has every evaluation of h publish the GPU fault report
// through h's Node publisher (none outside a cluster), and exports
// gpuheal_podresources_reads_total.
func startGPUFaults(h *healthLoop, exp *exporter.Exporter, pods podresources.Lister, clk clock.Clock, log *slog.Logger) error {
	if h.conditions == nil {
		return nil
	}
	r := &gpuFaultReporter{pods: pods, clk: clk, log: log, set: h.conditions.SetGPUFaults, invalidate: exp.Invalidate,
		reads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpuheal_podresources_reads_total",
			Help: "Reads of the kubelet's PodResources API for the pods of faulty GPUs, by result (ok, error).",
		}, []string{"result"})}
	if err := exp.Registry().Register(r.reads); err != nil {
		return fmt.Errorf("registering pod-resources metrics: %w", err)
	}
	h.setBeforeResult(r.observe)
	return nil
}

// observe publishes the report of one evaluation.
func (g *gpuFaultReporter) observe(ctx context.Context, snap *gpu.NodeSnapshot, r analyzer.Result) {
	faults := faultyGPUs(snap, r)
	var rep *v1alpha1.GPUFaultReport
	if len(faults) > 0 {
		g.holders(ctx, snap, faults)
		rep = &v1alpha1.GPUFaultReport{Time: metav1.NewTime(g.clk.Now()), GPUs: withPods(faults, snap, g.holdings, g.readErr)}
	}
	if err := g.set(rep); err != nil {
		g.log.Error("GPU fault report not published", "err", err)
	}
}

// holders reads the kubelet when the faulty GPUs changed or the last read
// is podsRefresh old.
func (g *gpuFaultReporter) holders(ctx context.Context, snap *gpu.NodeSnapshot, faults []v1alpha1.GPUFault) {
	key := faultKey(faults)
	if key == g.readFor && g.clk.Since(g.readAt) < podsRefresh {
		return
	}
	g.readFor, g.readAt = key, g.clk.Now()
	if g.pods == nil {
		g.holdings, g.readErr = nil, fmt.Errorf("%w: the pod-resources socket is turned off (--pod-resources-socket \"\")", podresources.ErrNoSocket)
		return
	}
	resp, err := g.pods.List(ctx)
	g.count(err)
	if err != nil {
		g.holdings, g.readErr = nil, err
		g.log.Warn("reading the pods of faulty GPUs; their node is drained whole", "err", err)
		return
	}
	g.holdings, g.readErr = podresources.Holders(resp, snapshotGPUs(snap)), nil
}

func (g *gpuFaultReporter) count(err error) {
	if g.reads == nil {
		return
	}
	result := "ok"
	if err != nil {
		result = "error"
	}
	g.reads.WithLabelValues(result).Inc()
	g.invalidate()
}

// faultyGPUs are the GPUs of snap with a fatal problem of their own whose
// action takes the GPU out (reset-gpu, reboot, replace), each with its
// worst problem's code and the strongest action. A finding about a GPU the
// snapshot lacks (index -1) has no GPU to name.
func faultyGPUs(snap *gpu.NodeSnapshot, r analyzer.Result) []v1alpha1.GPUFault {
	if snap == nil {
		return nil
	}
	byIndex := map[int]*v1alpha1.GPUFault{}
	var order []int
	for _, p := range r.Problems { // worst first
		if p.Severity != finding.Fatal || p.GPU == nil || p.GPU.Index < 0 || p.Action.Rank() < finding.ActionResetGPU.Rank() {
			continue
		}
		f := byIndex[p.GPU.Index]
		if f == nil {
			reason := p.Code
			if reason == "" {
				reason = p.Reason
			}
			f = &v1alpha1.GPUFault{GPURef: gpuRef(snap, p.GPU), Reason: reason, Action: string(p.Action)}
			byIndex[p.GPU.Index] = f
			order = append(order, p.GPU.Index)
		}
		if p.Action.Rank() > finding.Action(f.Action).Rank() {
			f.Action = string(p.Action)
		}
	}
	slices.Sort(order)
	out := make([]v1alpha1.GPUFault, 0, len(order))
	for _, i := range order {
		out = append(out, *byIndex[i])
	}
	return out
}

// gpuRef names a GPU as the reset needs it: the bus ID in nvidia-smi's
// form (00000000:3B:00.0), from the snapshot's normalized 0000:3b:00.0.
func gpuRef(snap *gpu.NodeSnapshot, ref *analyzer.GPURef) v1alpha1.GPURef {
	out := v1alpha1.GPURef{Index: int32(ref.Index), UUID: ref.UUID}
	bus := ref.PCIBusID
	for _, g := range snap.GPUs {
		if g.Index == ref.Index {
			out.UUID, bus = g.UUID, g.PCIBusID
		}
	}
	if domain, rest, ok := strings.Cut(bus, ":"); ok && len(domain) == 4 {
		bus = "0000" + domain + ":" + rest
	}
	out.BusID = strings.ToUpper(bus)
	return out
}

// withPods fills in each fault's pods and sharing mode. A GPU in MIG mode
// is MIG whatever the pods' devices say.
func withPods(faults []v1alpha1.GPUFault, snap *gpu.NodeSnapshot, holdings map[int]podresources.Holding, readErr error) []v1alpha1.GPUFault {
	out := slices.Clone(faults)
	for i := range out {
		f := &out[i]
		if readErr != nil {
			f.Sharing, f.PodsError = v1alpha1.GPUSharingUnknown, readErr.Error()+": the whole node is drained"
			continue
		}
		h, ok := holdings[int(f.Index)]
		if !ok {
			f.Sharing, f.PodsError = v1alpha1.GPUSharingUnknown, "the kubelet's answer was read for other GPUs"
			continue
		}
		f.Pods, f.Sharing, f.PodsError = h.Pods, h.Sharing, h.Err
		if migEnabled(snap, int(f.Index)) && f.Sharing != v1alpha1.GPUSharingUnknown {
			f.Sharing = v1alpha1.GPUSharingMIG
		}
	}
	return out
}

func migEnabled(snap *gpu.NodeSnapshot, index int) bool {
	for _, g := range snap.GPUs {
		if g.Index == index {
			return g.MIGEnabled != nil && *g.MIGEnabled
		}
	}
	return false
}

func snapshotGPUs(snap *gpu.NodeSnapshot) []podresources.GPU {
	out := make([]podresources.GPU, 0, len(snap.GPUs))
	for _, g := range snap.GPUs {
		out = append(out, podresources.GPU{Index: g.Index, UUID: g.UUID})
	}
	return out
}

func faultKey(faults []v1alpha1.GPUFault) string {
	var b strings.Builder
	for _, f := range faults {
		fmt.Fprintf(&b, "%d,", f.Index)
	}
	return b.String()
}
