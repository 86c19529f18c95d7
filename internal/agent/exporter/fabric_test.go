package exporter

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/gpuheal/gpuheal/internal/fabric"
)

// fabricSnapshot is an H100 node's ConnectX-7 in InfiniBand mode (values
// from the connectx-ib capture of internal/fabric/testdata), a second
// ConnectX whose port is down and whose rate could not be read, and an
// EFA device with device-wide counters; one of the eight expected devices
// is missing.
func fabricSnapshot() *fabric.Snapshot {
	rate := 400.0
	efaRate := 100.0
	return &fabric.Snapshot{
		ExpectedDevices: 8,
		Errors:          []string{"class/infiniband: more than 512 entries; read 512"},
		Devices: []fabric.Device{
			{Name: "mlx5_0", Driver: "mlx5_core", Kind: fabric.KindInfiniBand, PCIBusID: "0000:1a:00.0",
				BoardID: "MT_0000000838", FirmwareVersion: "28.41.1000",
				Ports: []fabric.Port{{Num: 1, State: "ACTIVE", PhysState: "LinkUp", RateGbps: &rate, LinkLayer: "InfiniBand",
					Counters:   map[string]uint64{"link_downed": 255, "port_xmit_data": 230442669431839},
					HWCounters: map[string]uint64{"out_of_sequence": 0}}}},
			{Name: "mlx5_1", Driver: "mlx5_core", Kind: fabric.KindInfiniBand, PCIBusID: "0000:3c:00.0",
				Ports:  []fabric.Port{{Num: 1, State: "DOWN", PhysState: "Polling", LinkLayer: "InfiniBand"}},
				Errors: []string{"ports/1/rate: input/output error"}},
			{Name: "rdmap16s27", Driver: "efa", Kind: fabric.KindEFA, PCIBusID: "0000:10:1b.0",
				Ports: []fabric.Port{{Num: 1, State: "ACTIVE", PhysState: "LinkUp", RateGbps: &efaRate, LinkLayer: "Unknown",
					HWCounters: map[string]uint64{"rx_drops": 0, "retrans_timeout_events": 2}}},
				HWCounters: map[string]uint64{"keep_alive_rcvd": 4242}},
		},
	}
}

// Every fabric family, whole: absent readings (mlx5_1's rate and counters,
// the EFA's counters/) have no series, and 0 is a real 0.
func TestFabricMetrics(t *testing.T) {
	s := twoGPUSnapshot()
	s.Fabric = fabricSnapshot()
	e := New(Options{})
	e.Update(s, nil)
	want := `
# HELP gpuheal_fabric_devices RDMA devices found under /sys/class/infiniband.
# TYPE gpuheal_fabric_devices gauge
gpuheal_fabric_devices 3
# HELP gpuheal_fabric_devices_expected RDMA devices the node should have (flag or instance type); absent when unknown.
# TYPE gpuheal_fabric_devices_expected gauge
gpuheal_fabric_devices_expected 8
# HELP gpuheal_fabric_read_errors Failures in the last read of the RDMA devices; node-level ones have device="".
# TYPE gpuheal_fabric_read_errors gauge
gpuheal_fabric_read_errors{device=""} 1
gpuheal_fabric_read_errors{device="mlx5_0"} 0
gpuheal_fabric_read_errors{device="mlx5_1"} 1
gpuheal_fabric_read_errors{device="rdmap16s27"} 0
# HELP gpuheal_fabric_device_info RDMA device identity; always 1.
# TYPE gpuheal_fabric_device_info gauge
gpuheal_fabric_device_info{board_id="MT_0000000838",device="mlx5_0",driver="mlx5_core",firmware_version="28.41.1000",kind="infiniband",node_guid="",pci_bus_id="0000:1a:00.0"} 1
gpuheal_fabric_device_info{board_id="",device="mlx5_1",driver="mlx5_core",firmware_version="",kind="infiniband",node_guid="",pci_bus_id="0000:3c:00.0"} 1
gpuheal_fabric_device_info{board_id="",device="rdmap16s27",driver="efa",firmware_version="",kind="efa",node_guid="",pci_bus_id="0000:10:1b.0"} 1
# HELP gpuheal_fabric_device_hw_counters_total Device-wide hw_counters (EFA admin queue), by the kernel's name.
# TYPE gpuheal_fabric_device_hw_counters_total counter
gpuheal_fabric_device_hw_counters_total{counter="keep_alive_rcvd",device="rdmap16s27"} 4242
# HELP gpuheal_fabric_port_up 1 when the RDMA port's logical state is ACTIVE.
# TYPE gpuheal_fabric_port_up gauge
gpuheal_fabric_port_up{device="mlx5_0",kind="infiniband",port="1"} 1
gpuheal_fabric_port_up{device="mlx5_1",kind="infiniband",port="1"} 0
gpuheal_fabric_port_up{device="rdmap16s27",kind="efa",port="1"} 1
# HELP gpuheal_fabric_port_info RDMA port states and link layer; always 1.
# TYPE gpuheal_fabric_port_info gauge
gpuheal_fabric_port_info{device="mlx5_0",link_layer="InfiniBand",phys_state="LinkUp",port="1",state="ACTIVE"} 1
gpuheal_fabric_port_info{device="mlx5_1",link_layer="InfiniBand",phys_state="Polling",port="1",state="DOWN"} 1
gpuheal_fabric_port_info{device="rdmap16s27",link_layer="Unknown",phys_state="LinkUp",port="1",state="ACTIVE"} 1
# HELP gpuheal_fabric_port_rate_bytes_per_second Negotiated rate of the RDMA port.
# TYPE gpuheal_fabric_port_rate_bytes_per_second gauge
gpuheal_fabric_port_rate_bytes_per_second{device="mlx5_0",port="1"} 5e+10
gpuheal_fabric_port_rate_bytes_per_second{device="rdmap16s27",port="1"} 1.25e+10
# HELP gpuheal_fabric_port_counters_total InfiniBand port counters (ports/N/counters), by the kernel's name.
# TYPE gpuheal_fabric_port_counters_total counter
gpuheal_fabric_port_counters_total{counter="link_downed",device="mlx5_0",port="1"} 255
gpuheal_fabric_port_counters_total{counter="port_xmit_data",device="mlx5_0",port="1"} 2.30442669431839e+14
# HELP gpuheal_fabric_port_hw_counters_total Driver port counters (ports/N/hw_counters), by the kernel's name.
# TYPE gpuheal_fabric_port_hw_counters_total counter
gpuheal_fabric_port_hw_counters_total{counter="out_of_sequence",device="mlx5_0",port="1"} 0
gpuheal_fabric_port_hw_counters_total{counter="retrans_timeout_events",device="rdmap16s27",port="1"} 2
gpuheal_fabric_port_hw_counters_total{counter="rx_drops",device="rdmap16s27",port="1"} 0
`
	names := []string{"gpuheal_fabric_devices", "gpuheal_fabric_devices_expected", "gpuheal_fabric_read_errors",
		"gpuheal_fabric_device_info", "gpuheal_fabric_device_hw_counters_total", "gpuheal_fabric_port_up",
		"gpuheal_fabric_port_info", "gpuheal_fabric_port_rate_bytes_per_second", "gpuheal_fabric_port_counters_total",
		"gpuheal_fabric_port_hw_counters_total"}
	if err := testutil.CollectAndCompare(e, strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}
	described := 0
	for _, d := range e.d.all {
		if strings.Contains(d.String(), `fqName: "gpuheal_fabric_`) {
			described++
		}
	}
	if described != len(names) {
		t.Errorf("%d fabric families described, %d checked here", described, len(names))
	}
}

// A snapshot without Fabric (the agent did not read it) has no fabric
// series at all, not "0 devices"; one with an empty Fabric has 0 devices.
func TestFabricAbsent(t *testing.T) {
	e := New(Options{})
	e.Update(twoGPUSnapshot(), nil)
	if got := testutil.CollectAndCount(e, "gpuheal_fabric_devices", "gpuheal_fabric_read_errors"); got != 0 {
		t.Errorf("no Fabric: %d fabric series, want 0", got)
	}
	s := twoGPUSnapshot()
	s.Fabric = &fabric.Snapshot{Devices: []fabric.Device{}}
	e.Update(s, nil)
	want := `
# HELP gpuheal_fabric_devices RDMA devices found under /sys/class/infiniband.
# TYPE gpuheal_fabric_devices gauge
gpuheal_fabric_devices 0
`
	if err := testutil.CollectAndCompare(e, strings.NewReader(want), "gpuheal_fabric_devices", "gpuheal_fabric_devices_expected"); err != nil {
		t.Error(err)
	}
}
