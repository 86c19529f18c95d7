// Package sim is a deterministic simulated GPU node: a gpu.Source with
// fault injection and a kernel log, for tests, benchmarks and the demo.
//
// Every reading is a pure function of (Options.Seed, Options.NodeName, GPU
// index, clock second), so the same options, clock times and fault
// sequence give byte-identical snapshots. The node starts healthy and idle
// (35–45 C, GPU-idle clock reason, zero error counters). With
// Options.Fabric it has RDMA devices too (fabric.go): up to 8 ConnectX-7
// InfiniBand HCAs or 32 EFA devices, every port up, their byte and packet
// counters advancing with the clock.
//
// Faults (Fault.Kind, with Params) change what the next Snapshot reads and
// write the kernel-log records the real fault produces, in the forms seen
// on real nodes:
//
//	xid                  code (required), message, pid, name, data: only the event
//	                     (XidEvents/XidTotals) and the line, no other state; "NVRM: Xid (PCI:0000:18:00): 13, pid='<unknown>', name=<unknown>, …"
//	                     (pid-only prefix for 63, 64, 94, 95; none for 149, 154)
//	sbe                  count=1: corrected ECC counts; silent, as on real GPUs (add xid 92 for a rate alarm)
//	dbe                  count=1: uncorrected ECC counts; Xid 48 "An uncorrectable double bit error (DBE) …"
//	row-remap-pending    cause=uncorrectable|correctable: remap count, Pending; Xid 63 "Row Remapper: New row marked …"
//	row-remap-failure    Failure; Xid 64 "Row Remapper Error: (0x…) - All reserved rows for bank are remapped"
//	retired-pages        sbe, dbe, pending=true (pre-Ampere only, V100); Xid 63
//	pcie-replay          count=1: replay counter; up to 4 AER reports, RxErr and BadTLP alternating:
//	                     "pcieport 0000:17:01.0: AER: Corrected error received: 0000:18:00.0" + 3 decode lines
//	pcie-downgrade       gen, width: current link; "pci 0000:18:00.0: 126.024 Gb/s available PCIe bandwidth, limited by 16.0 GT/s PCIe x8 link at …"
//	nvlink-down          link (required): link inactive; Xid 74 "NVLink: fatal error detected on link N(0x10000, …)"
//	nvlink-errors        link (required), crc, crc-data, replay, recovery: link counters; silent
//	thermal-slowdown     temp (default per model, ~90): HW thermal + HW slowdown bits, temperature; silent
//	power-brake          HW power brake + HW slowdown bits; silent
//	fell-off-bus         GPU listed as Missing; Xid 79 + the multi-line "NVRM: The NVIDIA GPU … fallen off the bus" record
//	gpu-missing          GPU and its /dev/nvidiaN vanish, FoundGPUs drops; silent
//	driver-version-change version (required), cuda: driver/CUDA change, kernel module keeps the old
//	                     version; multi-line "NVRM: API mismatch: the client has the version …" record
//	fabric-manager-stopped  FabricManager "stopped" (NVSwitch nodes only); silent (it logs elsewhere)
//	recovery-action      action=none|gpu-reset|node-reboot|drain-p2p|drain-and-reset or 0–4:
//	                     RecoveryAction, ResetRequired, DrainAndResetRecommended; Xid 154
//	                     "GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot)"
//	latent               mode=nccl-bandwidth|dcgm-memory|dcgm-diagnostic (required), factor (nccl-bandwidth,
//	                     default 0.6), surface-after (load time, default never), surface=fell-off-bus|dbe:
//	                     nothing passive and nothing logged; the board keeps it through Reset. Only the
//	                     check outputs show it (DCGMDiag, NCCLAllReduce, NVBandwidth). After surface-after
//	                     of workload (SetBusy) in one boot it becomes its passive fault (nccl-bandwidth and
//	                     dcgm-diagnostic: fell-off-bus, Xid 79; dcgm-memory: dbe, Xid 48)
//
// The RDMA fabric's kinds are node-level; device (default 0) is the
// device's index in PCI order (mlx5_N's N). A node needs Options.Fabric
// for them, and EFA devices take only fabric-device-missing and
// efa-errors (their driver hard-codes the port's state and rate and has no
// port counters). A reboot (Reset) fixes none of them: the adapters'
// counters start over and the fault goes on (fabricfault.go).
//
//	fabric-port-down       device: DOWN/Polling at 10 Gb/s, traffic stops, link_downed +1; level 6
//	                       "mlx5_core 0000:1a:00.0: mlx5_port_module_event:1131:(pid 0): Port module event: module 0, Cable unplugged"
//	fabric-link-flap       device, every (1m, at least 1s), times (5): link_downed +1 at once and every
//	                       `every` after, times in all; the port reads ACTIVE throughout; silent
//	fabric-symbol-errors   device, rate (5 a second): symbol_error rises (16 bits, held at 65535); silent
//	fabric-degraded-rate   device, rate (200 Gb/s, below the port's 400): the port trains at rate; silent
//	fabric-device-missing  device: the device is gone from Fabric.Devices; silent
//	efa-errors             device, rate (1 a second), counter (retrans_timeout_events, impaired_remote_conn_events,
//	                       unresponsive_remote_events, rdma_read_wr_err, rdma_write_wr_err): the hw_counter rises; silent
//
// Kernel-log records are kept (KernelLog) and streamed to
// Options.KernelLog as raw /dev/kmsg lines ("4,12,600000123,-;NVRM: …");
// Record.Dmesg and FormatDmesg render dmesg text ("[  600.000123] NVRM: …").
// NVRM lines are level 4 (warning), as on real nodes; AER notices and the
// link-speed report are level 6 and the AER decode lines level 4.
//
// A Schedule (LoadSchedule, YAML) times faults per node; Snapshot, ApplyDue
// and Run apply entries whose time has come (Snapshot and ApplyDue also
// surface latent faults whose load time has come).
//
// ResetGPU, SetPersistenceMode and GPUProcesses make the node the GPU tool
// of a single-GPU reset (internal/gpureset's Device), answering as
// nvidia-smi does; a reset clears what a real one clears and keeps the
// board's history and latent faults (gpureset.go). Reset is the node's
// reboot.
//
// DCGMDiag, NCCLAllReduce and NVBandwidth print what `dcgmi diag -r N -j`,
// nccl-tests' all_reduce_perf and nvbandwidth would print on the node now,
// in their real formats and at most MaxCheckOutput bytes (checks.go).
package sim
