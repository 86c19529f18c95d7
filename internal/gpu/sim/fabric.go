package sim

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gpuheal/gpuheal/internal/fabric"
)

// The node's RDMA fabric as the agent's fabric reader reports it
// (/sys/class/infiniband, internal/fabric). The forms follow real
// captures: ConnectX-7 HCAs in InfiniBand mode on an H100 node (board
// MT_0000000838, firmware 28.41.1000, "400 Gb/sec (4X NDR)", the 21 port
// counters and 25 mlx5 hw_counters), and the EFA devices of a p4d/p5,
// whose efa driver hard-codes ACTIVE/LinkUp and 4X EDR (100 Gb/s), reports
// link layer IB_LINK_LAYER_UNSPECIFIED (sysfs prints "Unknown") and has
// hw_counters only, its port's and its device's: EFA answers no
// performance-management MADs, so the kernel makes no counters/
// directory.

// FabricOptions is the node's RDMA fabric. The zero value is none.
type FabricOptions struct {
	// Devices is the number of RDMA devices: 1–8 for InfiniBand (an HGX
	// board's compute NICs, one ConnectX per GPU), 1–32 for EFA (32 on a
	// p5.48xlarge, 16 on a p5en, 4 on a p4d). 0 means no fabric:
	// Snapshot.Fabric stays nil, as before the sim had one.
	Devices int
	// Kind is fabric.KindInfiniBand (the default) or fabric.KindEFA.
	Kind string
}

// Fabric sizes of the common nodes.
const (
	InfiniBandDevices = 8  // HGX H100: mlx5_0 … mlx5_7
	EFADevicesP5      = 32 // p5.48xlarge
)

// ibBuses are the ConnectX-7 addresses of an H100 node, as the fabric
// reader's fixture has them; none is a GPU's (hgxBusIDs).
var ibBuses = []string{
	"0000:1a:00.0", "0000:3c:00.0", "0000:4d:00.0", "0000:5e:00.0",
	"0000:9c:00.0", "0000:bc:00.0", "0000:cc:00.0", "0000:dc:00.0",
}

// efaBuses are 32 EFA addresses laid out like a p5's: four devices on
// consecutive buses next to each GPU, function 0 of slot 0 (rdma-core
// names them rdmap<bus>s<slot> in decimal: rdmap79s0). Illustrative: no
// public capture of a p5's addresses was at hand. A node with fewer
// devices takes every (32/N)th, so they spread over the GPUs.
var efaBuses = func() []string {
	var out []string
	for _, base := range []int{0x4f, 0x60, 0x70, 0x80, 0x93, 0xa4, 0xb4, 0xc5} {
		for k := range 4 {
			out = append(out, fmt.Sprintf("0000:%02x:00.0", base+k))
		}
	}
	return out
}()

const (
	ibRateGbps  = 400 // 4X NDR
	efaRateGbps = 100 // the efa driver's fixed 4X EDR
	// downRateGbps is what an mlx5 port without a link reports: the 4X
	// SDR it trains from, as ibstat shows on a Down/Polling port.
	downRateGbps = 10
)

func (o FabricOptions) withDefaults() (FabricOptions, error) {
	switch o.Kind {
	case "":
		o.Kind = fabric.KindInfiniBand
	case fabric.KindInfiniBand, fabric.KindEFA:
	default:
		return o, fmt.Errorf("fabric kind %q: want %s or %s", o.Kind, fabric.KindInfiniBand, fabric.KindEFA)
	}
	limit := len(ibBuses)
	if o.Kind == fabric.KindEFA {
		limit = len(efaBuses)
	}
	if o.Devices < 0 || o.Devices > limit {
		return o, fmt.Errorf("fabric: %d %s devices out of range 0–%d", o.Devices, o.Kind, limit)
	}
	return o, nil
}

// fabricState is the mutable truth about the node's RDMA devices.
type fabricState struct {
	key    uint64
	efa    bool
	devs   []*rdmaDevice // by device index: PCI order
	byName []int         // device indexes in name order, as sysfs lists them
	// epoch is the start of this boot for the adapters: a reboot resets
	// them, and their counters count from it.
	epoch time.Time
}

func newFabric(key uint64, o FabricOptions, boot time.Time) *fabricState {
	f := &fabricState{key: key, efa: o.Kind == fabric.KindEFA, epoch: boot}
	for i := range o.Devices {
		d := &rdmaDevice{index: i, extra: map[string]uint64{}}
		if f.efa {
			d.bus = efaBuses[i*len(efaBuses)/o.Devices]
			var bus, slot int
			_, _ = fmt.Sscanf(d.bus, "0000:%02x:%02x.0", &bus, &slot)
			d.name, d.rate = fmt.Sprintf("rdmap%ds%d", bus, slot), efaRateGbps
		} else {
			h := hash(key, i, hNodeGUID, 0)
			d.bus, d.name, d.rate = ibBuses[i], fmt.Sprintf("mlx5_%d", i), ibRateGbps
			// Mellanox OUI 0c:42:a1, then 03:00 and the board's own bits,
			// in sysfs's node_guid form.
			d.guid = fmt.Sprintf("0c42:a103:00%02x:%04x", (h>>16)&0xff, h&0xffff)
		}
		f.devs = append(f.devs, d)
		f.byName = append(f.byName, i)
	}
	slices.SortFunc(f.byName, func(a, b int) int { return strings.Compare(f.devs[a].name, f.devs[b].name) })
	return f
}

// snapshot renders every device that is present, in name order.
// ExpectedDevices is the configured count: what an agent learns from the
// instance type's table or its flag.
func (f *fabricState) snapshot(now time.Time) *fabric.Snapshot {
	s := &fabric.Snapshot{ExpectedDevices: len(f.devs), Devices: make([]fabric.Device, 0, len(f.devs))}
	for _, i := range f.byName {
		if d := f.devs[i]; !d.missing {
			s.Devices = append(s.Devices, f.render(d, now))
		}
	}
	return s
}

func (f *fabricState) render(d *rdmaDevice, now time.Time) fabric.Device {
	p := fabric.Port{Num: 1, State: "ACTIVE", PhysState: "LinkUp"}
	rate := d.rate
	if d.degraded > 0 {
		rate = d.degraded
	}
	if d.down {
		p.State, p.PhysState, rate = "DOWN", "Polling", downRateGbps
	}
	p.RateGbps = &rate
	if f.efa {
		p.LinkLayer = "Unknown"
		p.HWCounters = f.efaCounters(d, now)
		return fabric.Device{Name: d.name, Driver: "efa", Kind: fabric.KindEFA, PCIBusID: d.bus, Ports: []fabric.Port{p},
			HWCounters: f.efaDeviceCounters(now)}
	}
	p.LinkLayer = "InfiniBand"
	p.Counters, p.HWCounters = f.ibCounters(d, now)
	return fabric.Device{
		Name: d.name, Driver: "mlx5_core", Kind: fabric.KindInfiniBand, PCIBusID: d.bus,
		BoardID: "MT_0000000838", FirmwareVersion: "28.41.1000", NodeGUID: d.guid,
		Ports: []fabric.Port{p},
	}
}
