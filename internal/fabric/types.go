// Package fabric reads the node's RDMA network devices — NVIDIA/Mellanox
// ConnectX in InfiniBand or RoCE mode and AWS EFA — from sysfs
// (/sys/class/infiniband), the way the kernel's ib_core exposes them. A
// distributed training job dies from a flapping port as surely as from a
// GPU that fell off the bus; this is the agent's view of that network.
//
// A counter missing from its map is one the device does not expose (or
// that said N/A, or failed to read), never zero; a nil RateGbps likewise.
package fabric

// Snapshot is one reading of every RDMA device of the node.
type Snapshot struct {
	// ExpectedDevices is the number of RDMA devices the node should have
	// (a flag, or the instance type's table); 0 means unknown.
	ExpectedDevices int      `json:"expectedDevices"`
	Devices         []Device `json:"devices"`
	// Errors are reading failures that are not one device's (the class
	// directory unreadable); a device's own go in its Errors.
	Errors []string `json:"errors,omitempty"`
}

// Device is one RDMA device: /sys/class/infiniband/<Name>.
type Device struct {
	Name string `json:"name"` // mlx5_0, rdmap16s27, …
	// Driver is the kernel driver bound to the device (mlx5_core, efa, …),
	// from device/driver; "" when unknown.
	Driver string `json:"driver,omitempty"`
	// Kind is KindInfiniBand, KindRoCE or KindEFA: what the fabric is,
	// decided from the driver and the ports' link layer.
	Kind            string `json:"kind"`
	PCIBusID        string `json:"pciBusId,omitempty"` // normalized 0000:3b:00.0
	BoardID         string `json:"boardId,omitempty"`
	FirmwareVersion string `json:"firmwareVersion,omitempty"`
	NodeGUID        string `json:"nodeGuid,omitempty"`
	Ports           []Port `json:"ports"`
	// HWCounters are the device-wide hw_counters/<name> (EFA: the admin
	// queue's cmds_err, no_completion_cmds, keep_alive_rcvd, …): a device
	// whose firmware stopped answering shows here and in no port.
	HWCounters map[string]uint64 `json:"hwCounters,omitempty"`
	Errors     []string          `json:"errors,omitempty"`
}

// Kinds of fabric.
const (
	KindInfiniBand = "infiniband"
	KindRoCE       = "roce"
	KindEFA        = "efa"
)

// Port is one port of a device: ports/<Num>.
type Port struct {
	Num int `json:"num"`
	// State is the logical state without its number: DOWN, INIT, ARMED,
	// ACTIVE, ACTIVE_DEFER ("4: ACTIVE" in sysfs).
	State string `json:"state"`
	// PhysState likewise: LinkUp, Polling, Disabled, … ("5: LinkUp").
	PhysState string `json:"physState"`
	// RateGbps is the negotiated rate ("400 Gb/sec (4X NDR)"); nil when
	// unreadable.
	RateGbps *float64 `json:"rateGbps,omitempty"`
	// LinkLayer is "InfiniBand", "Ethernet" (RoCE) or "Unknown" (EFA,
	// whose driver reports no link layer).
	LinkLayer string `json:"linkLayer,omitempty"`
	// Counters are ports/<N>/counters/<name>: the InfiniBand port
	// counters (symbol_error, link_downed, port_rcv_errors, …).
	Counters map[string]uint64 `json:"counters,omitempty"`
	// HWCounters are ports/<N>/hw_counters/<name> (mlx5, EFA): the
	// driver's own counters (rx_drops, retrans_timeout_events, …).
	HWCounters map[string]uint64 `json:"hwCounters,omitempty"`
}
