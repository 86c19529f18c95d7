package simfleet

import (
	"context"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/agent/kubecore"
	"github.com/gpuheal/gpuheal/internal/gpu/sim"
	"github.com/gpuheal/gpuheal/internal/simfleet/schedule"
)

// gpuResource is the extended resource a GPU workload requests.
const gpuResource = "nvidia.com/gpu"

// updateBusy tells each machine with a latent fault whether a workload
// runs on its GPUs now: only time under workload brings the fault to the
// surface. A check pod is not workload. Nothing is listed while no board
// carries a latent fault.
func (f *simFleet) updateBusy(ctx context.Context) error {
	f.mu.Lock()
	var latent []*simAgent
	for _, a := range f.agents {
		if a.board.latent() {
			latent = append(latent, a)
		}
	}
	f.mu.Unlock()
	if len(latent) == 0 {
		return nil
	}
	var pods simPodList
	if err := kubecore.Get(ctx, f.kube.Get().Resource("pods").Param("fieldSelector", "status.phase=Running"), &pods); err != nil {
		return fmt.Errorf("listing running pods for the workload time of latent faults: %w", err)
	}
	busy := map[string]bool{}
	for _, p := range pods.Items {
		if p.Labels[v1alpha1.LabelCheck] == "" && p.DeletionTimestamp == nil && requestsGPUs(&p) {
			busy[p.Spec.NodeName] = true
		}
	}
	for _, a := range latent {
		a.node.SetBusy(busy[a.name])
		f.recordSurfaced(a)
	}
	return nil
}

// recordSurfaced keeps in the boot's file the latent faults that have
// surfaced, so that a restarted fleet finds the GPU still broken, and
// marks the machine faulted (no second fatal fault before its repair).
func (f *simFleet) recordSurfaced(a *simAgent) {
	if _, err := a.node.ApplyDue(time.Now()); err != nil {
		f.log.Error("sim fleet: surfacing latent faults", "node", a.name, "err", err)
	}
	surfaced := a.node.SurfacedLatent()
	f.mu.Lock()
	defer f.mu.Unlock()
	if slices.Equal(surfaced, a.hardware.Surfaced) {
		return
	}
	before, faulted := a.hardware.Surfaced, a.hardware.Faulted
	a.hardware.Surfaced, a.hardware.Faulted = surfaced, a.hardware.Faulted || len(surfaced) > 0
	if err := f.saveFaults(a.name, a.hardware); err != nil {
		f.log.Error("sim fleet: keeping a surfaced latent fault on disk", "node", a.name, "err", err)
	}
	f.log.Info("sim fleet: latent fault surfaced", "node", a.name, "gpus", surfaced)
	// Journaled as a fatal fault of its own: the soak tells a node that
	// went back to work with a latent fault by it. On a machine already
	// broken in this boot it is one more symptom of a node under repair.
	for _, gpu := range surfaced {
		if slices.Contains(before, gpu) {
			continue
		}
		in := schedule.Injection{Index: schedule.IndexSurfaced, Time: time.Now(), Node: a.name, Slot: schedule.SlotOf(a.name),
			Class: schedule.ClassSurfaced, Kind: sim.KindLatent, GPU: gpu, Fatal: true}
		if faulted {
			in.Skipped = "the machine already has a fatal fault in this boot"
		}
		f.journal(in)
		faulted = true
	}
}

func requestsGPUs(p *simPod) bool {
	for _, c := range p.Spec.Containers {
		for _, r := range []map[string]resource.Quantity{c.Resources.Requests, c.Resources.Limits} {
			if q, ok := r[gpuResource]; ok && !q.IsZero() {
				return true
			}
		}
	}
	return false
}
