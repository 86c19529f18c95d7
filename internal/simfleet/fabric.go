package simfleet

import (
	"maps"
	"strconv"

	"github.com/gpuheal/gpuheal/internal/fabric"
	"github.com/gpuheal/gpuheal/internal/gpu/sim"
)

// The fabrics a fleet's nodes can have (Options.Fabric).
const (
	// FabricAuto gives a node the fabric its instance type has, since
	// the agent expects that many devices (fabric.ExpectedDevices): a
	// p5.48xlarge, what testenv's nodes claim to be, gets its 32 EFA
	// devices; a type without EFA (an on-premises HGX) 8 ConnectX
	// InfiniBand HCAs.
	FabricAuto = "auto"
	// FabricInfiniBand is 8 ConnectX HCAs on every node. On a node whose
	// instance type has EFA the agent expects that type's count, and
	// reads the devices short.
	FabricInfiniBand = "infiniband"
	// FabricEFA is a p5's 32 EFA devices on every node.
	FabricEFA  = "efa"
	FabricNone = "none"
)

// fabricFor is the simulated fabric of a node of instanceType.
func (o Options) fabricFor(instanceType string) sim.FabricOptions {
	ib := sim.FabricOptions{Devices: sim.InfiniBandDevices, Kind: fabric.KindInfiniBand}
	switch o.Fabric {
	case FabricInfiniBand:
		return ib
	case FabricEFA:
		return sim.FabricOptions{Devices: sim.EFADevicesP5, Kind: fabric.KindEFA}
	case FabricNone:
		return sim.FabricOptions{}
	}
	if n := fabric.ExpectedDevices(instanceType); n > 0 {
		return sim.FabricOptions{Devices: n, Kind: fabric.KindEFA}
	}
	return ib
}

// onFabric fits a fault of the mix to the node's fabric, and says whether
// it is still fatal there. A fabric fault lands on the device of the
// drawn GPU's rail: one NIC per GPU on an HGX board, four EFA devices per
// GPU on a p5.
//
// EFA shows no port state and no link counters: its driver reports every
// port ACTIVE. A bad cable or switch port on an EFA network shows as the
// adapter's own error counters rising: retransmit timeouts where a link
// comes and goes, remote endpoints unresponsive behind one that is gone.
// That is a warning in the default rules, nothing to repair on the node,
// so the fault is not fatal there. A NIC gone is gone on either fabric.
func (a *simAgent) onFabric(fault sim.Fault, fatal bool, gpus int) (sim.Fault, bool) {
	if !sim.IsFabricKind(fault.Kind) {
		return fault, fatal
	}
	fault.Params = maps.Clone(fault.Params)
	if fault.Params == nil {
		fault.Params = map[string]string{}
	}
	fault.Params["device"] = strconv.Itoa(fault.GPU * a.fabric.Devices / max(gpus, 1))
	if a.fabric.Kind != fabric.KindEFA {
		return fault, fatal
	}
	switch fault.Kind {
	case sim.KindFabricLinkFlap:
		fault.Kind, fault.Params = sim.KindEFAErrors, map[string]string{"device": fault.Params["device"], "counter": "retrans_timeout_events"}
		return fault, false
	case sim.KindFabricPortDown:
		fault.Kind, fault.Params = sim.KindEFAErrors, map[string]string{"device": fault.Params["device"], "counter": "unresponsive_remote_events"}
		return fault, false
	}
	return fault, fatal
}
