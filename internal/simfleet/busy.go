package simfleet

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/agent/kubecore"
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
		if len(a.board.Faults) > 0 {
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
	}
	return nil
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
