package nodestatus

import (
	"encoding/json"
	"fmt"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
)

// MaxGPUFaultsBytes bounds the gpu-faults annotation (the controller
// bounds what it reads too). Eight GPUs with a few pods each take well
// under 4 KiB; a report past the cap drops its pod lists, which turns
// every GPU Unknown and so costs a whole-node drain, never a wrong one.
const MaxGPUFaultsBytes = 32 << 10

// gpuFaults is the desired and shown v1alpha1.AnnotationGPUFaults: JSON,
// "" for no faulty GPU.
type gpuFaults struct {
	wanted string
	// content is wanted without its time: a report that says the same
	// keeps the time it was first made, so an unchanged report is never
	// written again.
	content string
	shown   string
	known   bool // shown is what the node has
}

// SetGPUFaults records the GPUs with a fault of their own, with the pods
// that hold them, and wakes the loop; nil or no GPU removes the
// annotation. It is written in the metadata patch before the conditions
// (Conditions.sync), so call it before Set with the result it comes from.
func (p *Conditions) SetGPUFaults(r *v1alpha1.GPUFaultReport) error {
	wanted, content := "", ""
	if r != nil && len(r.GPUs) > 0 {
		var err error
		if content, err = faultsContent(*r); err != nil {
			return err
		}
	}
	p.mu.Lock()
	same := content == p.faults.content
	p.mu.Unlock()
	if same {
		return nil
	}
	if content != "" {
		var err error
		if wanted, err = encodeFaults(*r); err != nil {
			return err
		}
	}
	p.mu.Lock()
	p.faults.wanted, p.faults.content = wanted, content
	p.mu.Unlock()
	poke(p.wake)
	return nil
}

// faultsContent is the report's JSON without its time.
func faultsContent(r v1alpha1.GPUFaultReport) (string, error) {
	b, err := json.Marshal(r.GPUs)
	if err != nil {
		return "", fmt.Errorf("encoding the GPU fault report: %w", err)
	}
	return string(b), nil
}

// encodeFaults is the annotation value, cut to MaxGPUFaultsBytes by
// dropping the pod lists.
func encodeFaults(r v1alpha1.GPUFaultReport) (string, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return "", fmt.Errorf("encoding the GPU fault report: %w", err)
	}
	if len(b) <= MaxGPUFaultsBytes {
		return string(b), nil
	}
	cut := r
	cut.GPUs = make([]v1alpha1.GPUFault, len(r.GPUs))
	for i, g := range r.GPUs {
		g.PodsError = fmt.Sprintf("%d pods: too many to list in %d bytes: the whole node is drained", len(g.Pods), MaxGPUFaultsBytes)
		g.Pods, g.Sharing = nil, v1alpha1.GPUSharingUnknown
		cut.GPUs[i] = g
	}
	if b, err = json.Marshal(cut); err != nil {
		return "", fmt.Errorf("encoding the GPU fault report: %w", err)
	}
	if len(b) > MaxGPUFaultsBytes {
		return "", fmt.Errorf("the GPU fault report of %d GPUs takes %d bytes without its pods, over %d", len(cut.GPUs), len(b), MaxGPUFaultsBytes)
	}
	return string(b), nil
}

// leadingFaults is the report for the metadata patch before the
// conditions: the new one, or while it is empty the one shown, so that the
// report trails a GPU turning healthy as the advice does.
func leadingFaults(f gpuFaults) string {
	if f.wanted == "" && f.known {
		return f.shown
	}
	return f.wanted
}
