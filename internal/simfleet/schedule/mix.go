package schedule

import (
	"math/rand/v2"

	"github.com/gpuheal/gpuheal/internal/gpu/sim"
)

// FaultClass is one line of the failure mix the sim fleet draws from.
type FaultClass struct {
	Name   string
	Weight float64
	Fault  sim.Fault
	// Fatal: the default rules take the node out of service for it.
	Fatal bool
}

// mix is the Llama 3 paper's table of 419 unexpected interruptions on
// 16,384 H100s (the Llama 3 paper, "The Llama 3 Herd of Models" (Meta, 2024), Table 5), limited to the
// causes a GPU node shows, each mapped to the fault a GPU of that class
// shows. Software bugs stay in as application Xids: they happen as often
// and must not lead to a repair. Counts are the paper's; causes outside
// the node (switches, host maintenance, SSDs, PSUs) are left out.
var mix = []FaultClass{
	{"faulty-gpu", 148, sim.Fault{Kind: sim.KindFellOffBus}, true},
	{"hbm3-dbe", 50, sim.Fault{Kind: sim.KindDBE}, true},
	{"hbm3-row-remap-failure", 22, sim.Fault{Kind: sim.KindRowRemapFailure}, true},
	{"software-xid13", 54, sim.Fault{Kind: sim.KindXid, Params: map[string]string{"code": "13"}}, false},
	{"nvlink-down", 35, sim.Fault{Kind: sim.KindNVLinkDown, Params: map[string]string{"link": "0"}}, true},
	{"sram-uncontained-ecc", 19, sim.Fault{Kind: sim.KindXid, Params: map[string]string{"code": "95"}}, true},
	{"gsp-timeout", 17, sim.Fault{Kind: sim.KindXid, Params: map[string]string{"code": "119"}}, true},
	// A hardware thermal slowdown held 5 minutes is a warning in the
	// default rules (an Event; the GPU still works, slower): no repair.
	{"thermal", 6, sim.Fault{Kind: sim.KindThermalSlowdown}, false},
}

// planted are classes the mix never draws: only a schedule or the demo
// puts them on a node. Each is a latent fault (internal/gpu/sim): no
// passive signal until surfaceAfter of workload, when it surfaces as a
// fatal fault; a health gate's check finds it at once. Not Fatal: on its
// own it takes no node out of service.
var planted = []FaultClass{
	{"latent-nccl-bandwidth", 0, latentFault(sim.LatentNCCLBandwidth), false},
	{"latent-dcgm-memory", 0, latentFault(sim.LatentDCGMMemory), false},
	{"latent-dcgm-diagnostic", 0, latentFault(sim.LatentDCGMDiagnostic), false},
}

// LatentSurfaceAfter is the workload time after which a planted latent
// fault surfaces, unless the fleet is told otherwise.
const LatentSurfaceAfter = "20m"

func latentFault(mode sim.LatentMode) sim.Fault {
	return sim.Fault{Kind: sim.KindLatent, Params: map[string]string{"mode": string(mode), "surface-after": LatentSurfaceAfter}}
}

// Draw picks a class with probability proportional to its weight.
func Draw(rng *rand.Rand) FaultClass {
	var total float64
	for _, c := range mix {
		total += c.Weight
	}
	x := rng.Float64() * total
	for _, c := range mix {
		if x < c.Weight {
			return c
		}
		x -= c.Weight
	}
	return mix[len(mix)-1]
}

// ClassNamed returns the class of the mix, or a planted one, with that
// name.
func ClassNamed(name string) (FaultClass, bool) {
	for _, list := range [][]FaultClass{mix, planted} {
		for _, c := range list {
			if c.Name == name {
				return c, true
			}
		}
	}
	return FaultClass{}, false
}
