package analyzer

import (
	"time"

	"github.com/gpuheal/gpuheal/internal/finding"
	"github.com/gpuheal/gpuheal/internal/gpu"
)

// input is one evaluation's variables, built once and shared by every
// rule: the per-rule cost is then only the CEL program itself.
type input struct {
	node        map[string]any
	gpus        []any
	gpuMaps     []map[string]any
	gpuRefs     []GPURef
	keys        []string
	deltas      []map[string]any
	seconds     []float64
	findings    []any
	findingMaps []map[string]any
	byGPU       map[string][]any // findings by PCI bus id
	byBus       map[string]*GPURef
	ports       []portInput
}

func (e *Engine) prepare(snap *gpu.NodeSnapshot, findings []finding.Finding, now time.Time) *input {
	in := &input{
		findings:    make([]any, len(findings)),
		findingMaps: make([]map[string]any, len(findings)),
	}
	for i := range findings {
		m := findingVars(&findings[i])
		in.findings[i], in.findingMaps[i] = m, m
		if g := findings[i].GPU; g != "" {
			if in.byGPU == nil {
				in.byGPU = map[string][]any{}
			}
			in.byGPU[g] = append(in.byGPU[g], m)
		}
	}
	if snap == nil {
		in.gpus = []any{}
		in.node = nodeVars(nil, in.gpus)
		_, in.node["fabric"] = e.preparePorts(nil, now)
		return in
	}
	at := snap.Time
	if at.IsZero() {
		at = now
	}
	n := len(snap.GPUs)
	in.gpus = make([]any, n)
	in.gpuMaps = make([]map[string]any, n)
	in.gpuRefs = make([]GPURef, n)
	in.keys = make([]string, n)
	in.deltas = make([]map[string]any, n)
	in.seconds = make([]float64, n)
	in.byBus = make(map[string]*GPURef, n)
	next := make(map[string]counters, n)
	for i := range snap.GPUs {
		g := &snap.GPUs[i]
		m := gpuVars(g)
		in.gpus[i], in.gpuMaps[i] = m, m
		in.gpuRefs[i] = GPURef{Index: g.Index, UUID: g.UUID, PCIBusID: g.PCIBusID, Name: g.Name}
		in.byBus[g.PCIBusID] = &in.gpuRefs[i]
		k := gpuKey(g)
		in.keys[i] = k
		cur := readCounters(g, at)
		var prev *counters
		if p, ok := e.prev[k]; ok {
			prev = &p
		}
		in.deltas[i], in.seconds[i] = deltaVars(cur, prev)
		switch {
		case prev != nil && (g.Missing || !at.After(prev.at)):
			// A GPU that does not answer has no readings, and a snapshot
			// no newer than the last has no interval: keep the older
			// reading, so the next delta still spans the whole rise.
			next[k] = *prev
		case !g.Missing:
			next[k] = cur
		}
	}
	e.prev = next
	in.node = nodeVars(snap, in.gpus)
	in.ports, in.node["fabric"] = e.preparePorts(snap.Fabric, at)
	return in
}

// refFor names the GPU a finding is about: the snapshot's GPU at that PCI
// address, or just the address (Index -1) when the snapshot lacks it, or
// nil for a node-level finding.
func (in *input) refFor(f *finding.Finding) *GPURef {
	if f.GPU == "" {
		return nil
	}
	if r := in.byBus[f.GPU]; r != nil {
		return r
	}
	return &GPURef{Index: -1, PCIBusID: f.GPU}
}
