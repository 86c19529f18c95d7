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

// ClassNamed returns the class of the mix with that name.
func ClassNamed(name string) (FaultClass, bool) {
	for _, c := range mix {
		if c.Name == name {
			return c, true
		}
	}
	return FaultClass{}, false
}
