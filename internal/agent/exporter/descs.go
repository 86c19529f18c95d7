package exporter

import "github.com/prometheus/client_golang/prometheus"

// gpuLabels identify a GPU in every per-GPU series. There is no node
// label: Prometheus attaches the node from the scrape target's labels,
// and a second copy here would clash with it.
var gpuLabels = []string{"gpu", "uuid", "pci_bus_id", "model"}

const nGPULabels = 4 // len(gpuLabels)

// descs are built once in New; Collect only fills in values. docs/metrics.md
// describes each metric and where it comes from.
type descs struct {
	all []*prometheus.Desc // for Describe
	// nodeAll and fabricAll split all between the exporter's two registries
	// (parts.go): the fabric's gpuheal_fabric_* families and the rest.
	nodeAll, fabricAll []*prometheus.Desc
	// labels holds each descriptor's label names in the sorted order the
	// exposition wants, for the samples Collect sends (sample.go).
	labels map[*prometheus.Desc]*sortedLabels

	gpuInfo, missing                                *prometheus.Desc
	util, memUtil, memUsed, memTotal                *prometheus.Desc
	temp, memTemp, power, powerLimit                *prometheus.Desc
	smClock, memClock, clockReasons, clockActive    *prometheus.Desc
	eccMode, eccErrors                              *prometheus.Desc
	retired, retiredPending                         *prometheus.Desc
	remapped, remappedPending, remappedFailure      *prometheus.Desc
	pcieReplay, pcieGen, pcieWidth                  *prometheus.Desc
	nvlinkUp, nvlinkErrors, xid                     *prometheus.Desc
	recovery, resetRequired, drainReset             *prometheus.Desc
	persistence, mig, fabric, queryErrors           *prometheus.Desc
	nodeInfo, nodeGPUs, driverMismatch, fabricMgrUp *prometheus.Desc
	deviceFiles, snapshotTime                       *prometheus.Desc
	collectorSuccess, collectorDuration             *prometheus.Desc
	fab                                             fabricDescs
}

func newDescs() *descs {
	d := &descs{labels: map[*prometheus.Desc]*sortedLabels{}}
	desc := func(name, help string, labels []string) *prometheus.Desc {
		pd := prometheus.NewDesc("gpuheal_"+name, help, labels, nil)
		d.all = append(d.all, pd)
		d.labels[pd] = sortLabels(labels)
		return pd
	}
	g := func(name, help string, extra ...string) *prometheus.Desc {
		return desc("gpu_"+name, help, append(append([]string(nil), gpuLabels...), extra...))
	}

	d.gpuInfo = g("info", "GPU identity; always 1.", "serial", "vbios")
	d.missing = g("missing", "1 when the GPU is known but does not answer (fallen off the bus).")
	d.util = g("utilization_percent", "Percent of time a kernel ran on the GPU over the last sample period.")
	d.memUtil = g("memory_utilization_percent", "Percent of time device memory was read or written over the last sample period.")
	d.memUsed = g("memory_used_bytes", "Framebuffer memory in use.")
	d.memTotal = g("memory_total_bytes", "Framebuffer memory installed.")
	d.temp = g("temperature_celsius", "GPU core temperature.")
	d.memTemp = g("memory_temperature_celsius", "HBM temperature.")
	d.power = g("power_draw_watts", "Power draw.")
	d.powerLimit = g("power_limit_watts", "Enforced power limit.")
	d.smClock = g("sm_clock_hertz", "Current SM clock.")
	d.memClock = g("memory_clock_hertz", "Current memory clock.")
	d.clockReasons = g("clock_event_reasons", "NVML clock event (throttle) reasons bitmask.")
	d.clockActive = g("clock_event_active", "1 while the clock event reason holds the clocks down.", "reason")
	d.eccMode = g("ecc_mode_enabled", "1 when ECC is enabled.")
	d.eccErrors = g("ecc_errors_total", "ECC errors; volatile counts reset at driver reload.", "type", "scope")
	d.retired = g("retired_pages", "Retired framebuffer pages (pre-Ampere).", "cause")
	d.retiredPending = g("retired_pages_pending", "1 when a page retirement waits for the next reset.")
	d.remapped = g("remapped_rows", "Remapped memory rows (Ampere and later).", "kind")
	d.remappedPending = g("remapped_rows_pending", "1 when a row remap waits for the next GPU reset.")
	d.remappedFailure = g("remapped_rows_failure", "1 when a row remap failed (no spare rows left).")
	d.pcieReplay = g("pcie_replay_total", "PCIe replays; a rising count precedes a GPU falling off the bus.")
	d.pcieGen = g("pcie_link_generation", "PCIe link generation.", "which")
	d.pcieWidth = g("pcie_link_width", "PCIe link width in lanes.", "which")
	d.nvlinkUp = g("nvlink_up", "1 when the NVLink link is active.", "link")
	d.nvlinkErrors = g("nvlink_errors_total", "NVLink data-link-layer error counters.", "link", "type")
	d.xid = g("xid_errors_total", "Xid errors seen by the GPU backend since the agent started.", "xid")
	d.recovery = g("recovery_action", "Driver-recommended recovery: 0 none, 1 GPU reset, 2 node reboot, 3 drain P2P, 4 drain and reset.")
	d.resetRequired = g("reset_required", "1 when the driver says the GPU needs a reset.")
	d.drainReset = g("drain_and_reset_recommended", "1 when the driver recommends draining work and resetting the GPU.")
	d.persistence = g("persistence_mode", "1 when persistence mode is enabled.")
	d.mig = g("mig_mode_enabled", "1 when MIG mode is enabled.")
	d.fabric = g("fabric_info", "NVSwitch fabric registration of the GPU; always 1.", "state", "status")
	d.queryErrors = g("query_errors_total", "Failed or timed-out GPU queries since the agent started; node-level ones have gpu=\"\".", "query")

	d.nodeInfo = desc("node_info", "Node driver and kernel versions; always 1.",
		[]string{"backend", "driver_version", "cuda_version", "kernel_release", "kernel_module_version"})
	d.nodeGPUs = desc("node_gpus", "GPUs expected on the node and found by the backend.", []string{"state"})
	d.driverMismatch = desc("node_driver_mismatch", "1 when the loaded kernel module and the user-space driver versions differ.", nil)
	d.fabricMgrUp = desc("node_fabric_manager_up", "1 when nvidia-fabricmanager runs (NVSwitch nodes only).", nil)
	d.deviceFiles = desc("node_device_files", "Number of /dev/nvidia* device files.", nil)
	d.snapshotTime = desc("snapshot_timestamp_seconds", "When the exported snapshot was taken, in Unix seconds.", nil)
	d.collectorSuccess = desc("collector_success", "1 when the collector's last run succeeded.", []string{"collector"})
	d.collectorDuration = desc("collector_duration_seconds", "How long the collector's last run took.", []string{"collector"})

	d.nodeAll = d.all[:len(d.all):len(d.all)]
	fab := func(name, help string, labels ...string) *prometheus.Desc {
		return desc("fabric_"+name, help, labels)
	}
	d.fab = fabricDescs{
		devices:  fab("devices", "RDMA devices found under /sys/class/infiniband."),
		expected: fab("devices_expected", "RDMA devices the node should have (flag or instance type); absent when unknown."),
		readErrors: fab("read_errors", "Failures in the last read of the RDMA devices; node-level ones have device=\"\".",
			"device"),
		deviceInfo: fab("device_info", "RDMA device identity; always 1.",
			"device", "kind", "driver", "pci_bus_id", "board_id", "firmware_version", "node_guid"),
		deviceHW: fab("device_hw_counters_total", "Device-wide hw_counters (EFA admin queue), by the kernel's name.",
			"device", "counter"),
		portUp:   fab("port_up", "1 when the RDMA port's logical state is ACTIVE.", "device", "port", "kind"),
		portInfo: fab("port_info", "RDMA port states and link layer; always 1.", "device", "port", "state", "phys_state", "link_layer"),
		portRate: fab("port_rate_bytes_per_second", "Negotiated rate of the RDMA port.", "device", "port"),
		portCounters: fab("port_counters_total", "InfiniBand port counters (ports/N/counters), by the kernel's name.",
			"device", "port", "counter"),
		portHWCounters: fab("port_hw_counters_total", "Driver port counters (ports/N/hw_counters), by the kernel's name.",
			"device", "port", "counter"),
	}
	d.fabricAll = d.all[len(d.nodeAll):]
	return d
}
