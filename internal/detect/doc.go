// Package detect turns kernel-log messages, and the lines of NVIDIA
// Fabric Manager's log, into findings.
//
// A Detector is fed one message at a time (internal/kmsg strips the
// /dev/kmsg, dmesg, dmesg -T, ISO and syslog prefixes). Most kernel lines
// are noise, so every message first goes through a handful of
// strings.Contains checks for the few substrings that matter; only lines
// that pass are parsed, by hand, without regular expressions. A
// multi-line record may arrive joined by "\n" (/dev/kmsg) or as separate
// consecutive messages (text dmesg); both give the same findings.
//
// What is detected, and what gpuheal recommends by default (⏎ separates
// the lines of one multi-line record):
//
//	code                severity  action       kernel line
//	XID<n>              catalog   catalog      NVRM: Xid (PCI:0000:05:00): 79, pid=…, name=…, text
//	                    (package xid, with its count thresholds and line-dependent codes)
//	GPU_FELL_OFF_BUS    fatal     reboot       NVRM: The NVIDIA GPU 0000:b3:00.0 ⏎ (PCI ID: 10de:26b5)
//	                                           installed in this system has ⏎ fallen off the bus and …
//	SXID                fatal     reboot       nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 20034, Fatal, …
//	SXID                warning   none         … SXid (…): 12028, Non-fatal, …
//	PCIE_AER            warning   none         nvidia 0000:18:00.0: PCIe Bus Error: severity=Corrected, …
//	PCIE_AER            warning   none         … severity=Uncorrected (Non-Fatal), …
//	PCIE_AER            fatal     reboot       … severity=Uncorrected (Fatal), …
//	PCIE_LINK_DEGRADED  warning   none         pci 0000:18:00.0: … available PCIe bandwidth, limited by …
//	DRIVER_MISMATCH     fatal     reboot       NVRM: API mismatch: the client has the version X, but ⏎ …
//	DRIVER_LOAD_FAILED  fatal     reboot       NVRM: … RmInitAdapter failed / rm_init_adapter failed /
//	                                           failed to initialize / probe routine failed / None of
//	                                           the NVIDIA devices were initialized;
//	                                           nvidia: probe of 0000:01:00.0 failed with error -1
//	SOFT_LOCKUP         warning   none         watchdog: BUG: soft lockup - CPU#N stuck for Ns! […]
//	HUNG_TASK           warning   none         INFO: task NAME:PID blocked for more than N seconds.
//	CONNTRACK_FULL      warning   none         nf_conntrack: table full, dropping packet
//	KERNEL_BUG          warning   none         BUG: … (not a soft lockup); kernel BUG at …
//	OOM_KILL            warning   none         Out of memory: Killed process 1234 (python) …;
//	                                           Memory cgroup out of memory: Killed process …;
//	                                           oom-kill:constraint=…,pid=N,…
//	(none)              —         —            NVRM: Rate limiting GSP RPC error prints …
//
// The network fabric (NVIDIA/Mellanox ConnectX: mlx5_core; AWS EFA: efa)
// is not a GPU: these findings leave GPU empty and name the adapter in
// Device (its normalized PCI address, or the RDMA device's name when the
// line has none). "mlx5_core <bus>:" and "efa <bus>[ <ibdev>]:" or
// "infiniband <efa ibdev>:" start every line; a "func:line:(pid N): "
// after the address is skipped.
//
//	code                   severity  action   line
//	MLX5_CABLE_UNPLUGGED   warning   none     Port module event: module 1, Cable unplugged
//	MLX5_MODULE_DISABLED   warning   none     Port module event: module 1, Cable disabled
//	MLX5_MODULE_ERROR      fatal     replace  Port module event[error]: module 0, Cable error, <any error
//	                                          but High Temperature: Bus stuck (I2C or data shorted),
//	                                          Power budget exceeded, No EEPROM/retry timeout, …>
//	MLX5_HIGH_TEMPERATURE  warning   none     … Cable error, High Temperature;
//	                                          High temperature on sensors with bit set … (the ASIC)
//	MLX5_LINK_DOWN         warning   none     mlx5_core 0000:41:00.0 enp65s0f0np0: Link down
//	MLX5_FW_FATAL          fatal     reboot   device's health compromised[ - reached miss count];
//	                                          Fatal error[ N] detected; health recovery flow aborted, …;
//	                                          health recovery failed; Driver is in error state. Unloading
//	MLX5_FW_HEALTH         warning   none     Health issue observed, <syndrome>, severity(3..7) …:
//	MLX5_FW_HEALTH         fatal     reboot   … severity(0..2) … (critical or worse, the firmware says)
//	MLX5_CMD_TIMEOUT       fatal     reboot   <COMMAND>(0x…) [Async, ]timeout. Will cause a leak of a
//	                                          command resource
//	MLX5_PCI_ERROR         warning   none     mlx5_pci_err_detected … Exit, result = 3, need reset
//	MLX5_PCI_ERROR         fatal     reboot   mlx5_pci_err_detected … Exit, result = 4, disconnect
//	MLX5_PCIE_POWER        warning   none     Detected insufficient power on the PCIe slot (27W).
//	EFA_ADMIN_QUEUE_FAILED fatal     reboot   The device didn't send any completion for admin cmd …;
//	                                          The device sent a completion but the driver didn't
//	                                          receive any MSI-X interrupt …; Wait for completion
//	                                          (polling) timeout; Admin queue is closed
//	EFA_DEVICE_FAILED      fatal     reboot   Reading register timed out. …; Device isn't ready, …;
//	                                          Reset indication didn't turn on/off; EFA device init failed
//	EFA_CMD_FAILED         warning   none     Failed to process command … / Failed to submit command …
//	EFA_ASYNC_EVENT        warning   none     Unknown event was received or event with unimplemented handler
//
// NVIDIA Fabric Manager's log (/var/log/fabricmanager.log, "[Feb 27 2025
// 15:10:02] [ERROR] [tid 12727] message") is a file of its own, read by a
// FabricManager detector (NewFabricManager) one line at a time; only
// ERROR and FATAL lines count, node-level, source "fabricmanager":
//
//	code                   severity  action   message
//	FM_NVSWITCH_FATAL      fatal     reboot   detected NVSwitch fatal error 20034 on fid 0 on NVSwitch
//	                                          pci bus id 00000000:86:00.0 physical id 3 port 33
//	FM_NVSWITCH_NONFATAL   warning   none     detected NVSwitch non-fatal error 12028 on fid 0 on …
//	FM_GPU_NVLINK_FATAL    fatal     reboot   Fabric Manager detected GPU NVL Fatal error on :
//	FM_MULTICAST_FAILED    fatal     reboot   failed to find the GPU handle N in the multicast team …
//	FM_TOPOLOGY_MISMATCH   fatal     reboot   detected number of NVSwitches don't match with any
//	                                          supported system topology, aborting fabric manager
//	FM_ERROR               warning   none     any other ERROR or FATAL line
//	(none)                 —         —        … [NV_WARN_NOTHING_TO_DO] (no NVSwitch to manage)
//
// Choices worth knowing:
//
//   - The driver rate-limits GSP errors ("NVRM: Rate limiting GSP RPC error
//     prints …"). That line is not a finding: the Xid 119/120 before it
//     already is (fatal on the first one), and later ones are printed 1 in
//     30, which only undercounts.
//   - SXID findings leave Xid empty and GPU empty: SXid numbers are a
//     separate namespace from Xids (20034 is not an Xid, and a catalog
//     override for it must not apply), and the switch is not a GPU — a
//     fatal NVSwitch error takes down the NVLink fabric of every GPU. The
//     SXid number, the switch and its PCI address stay in Message. The
//     follow-up SXid lines of one error (", Severity 0 Engine instance …",
//     ", Data {…}") are not findings.
//   - PCIE_AER is reported only for devices the nvidia driver owns (the
//     kernel prints the driver name before the address); the root port's
//     "AER: … error received: <dev>" notice and the detail lines after the
//     device's are not findings, so one report gives one finding.
//   - PCIE_LINK_DEGRADED is printed by the PCI core before a driver binds,
//     so the line cannot say whether the device is a GPU: GPU holds the
//     device's address and consumers match it against the node's GPUs.
//   - GPU_FELL_OFF_BUS comes in addition to the Xid 79 some drivers print
//     first; both say reboot, and consumers group findings by GPU.
//   - One OOM kill prints an "oom-kill:" summary and a "Killed process"
//     line; a "Killed process" line for the PID just reported is folded
//     into that finding.
//   - Driver load failures print several lines per GPU; each is a finding
//     (same code and GPU), consumers group them.
//   - The fabric's findings recommend what repairs the part at fault, never
//     reset-gpu: a NIC is not a GPU. A cable, transceiver or switch port
//     is repaired by a person; a node that needs its fabric and lost it is
//     replaced or rebooted so the job runs elsewhere meanwhile.
//   - MLX5_CABLE_UNPLUGGED is a warning: a dual-port card with one port
//     cabled prints it for the empty port at every boot (the gpud capture
//     in testdata), so the line alone cannot say the fabric lost a link.
//     Whether a port the node needs is down is the fabric snapshot's to
//     judge (port state, link_downed), as NVSentinel also decides.
//   - MLX5_MODULE_ERROR is fatal with replace: the firmware disabled the
//     module (bus stuck, no EEPROM, power budget, a cable it refuses), so
//     its port cannot link, and no reboot changes a transceiver. Replace
//     hands the node to its provider: a new host in a cloud, the repair
//     queue (and the person with the cable) on bare metal.
//   - MLX5_HIGH_TEMPERATURE is a warning: a module or ASIC running hot
//     wants airflow looked at; if the module shuts down, its port goes
//     down and the fabric snapshot sees that.
//   - MLX5_LINK_DOWN is the Ethernet (RoCE) interface losing carrier, a
//     warning: switch reboots and cable moves print it too. InfiniBand
//     ports print no such line; their state is the snapshot's.
//   - MLX5_FW_FATAL wants a reboot: the firmware stopped its heartbeat or
//     raised a fatal sensor, and the driver's own recovery (a software
//     reset, itself disruptive) either fails, is aborted or cannot run
//     for a missed heartbeat; a reboot resets the adapter whatever the
//     driver managed. The health buffer the driver dumps after it
//     (assert_var, synd 0x…: …, "Health issue observed, …" within 8
//     lines) is part of the same report, not another finding.
//   - MLX5_FW_HEALTH, the buffer dump heading a report of its own (a
//     syndrome change without a fatal sensor), takes the firmware's own
//     severity: critical or worse is fatal, an error a warning. A
//     repeated one is for a counting rule to escalate.
//   - MLX5_CMD_TIMEOUT is fatal: the firmware did not answer a command,
//     and the driver leaks the command's slot rather than free memory the
//     firmware may still write; the adapter cannot be managed reliably
//     until the driver reloads, which in practice is a reboot.
//   - MLX5_PCI_ERROR "need reset" is the start of PCI error recovery
//     (which may succeed): a warning; "disconnect" means the PCI core gave
//     the device up: fatal, reboot. An AER line of a NIC is still no
//     finding (PCIE_AER is the nvidia driver's).
//   - EFA_ADMIN_QUEUE_FAILED is fatal: after one admin command times out
//     the driver closes its admin queue, so no queue pair or memory region
//     can be created until the driver reloads. EFA_DEVICE_FAILED (no
//     answer to register reads, a reset that does not finish, a device
//     not ready at load) is likewise unusable. Reboot; the escalation
//     replaces a node rebooted too often.
//   - EFA_CMD_FAILED is a warning: one refused command; the Neuron
//     runtime's documented race on process exit prints it for DEREG_MR
//     harmlessly. EFA_ASYNC_EVENT is the device's asynchronous event
//     (fatal error, warning or notification group) that the driver has
//     no handler for and so cannot name: a warning to look at.
//     "Keep alive" and "device reset" watchdog lines are ENA's, the
//     Ethernet driver's, not EFA's; "ena …" lines are no finding.
//   - Fabric Manager: an NVSwitch fatal error is the switch side of an
//     SXid and is handled like one (reboot). A GPU NVLink fatal error
//     names the GPU by fabric GUID only, so it is node-level. A multicast
//     request for a GPU handle Fabric Manager does not know means its
//     state and the GPUs' disagree (NVLink SHARP jobs fail); they start
//     over together only on a reboot. A topology mismatch (fewer
//     switches than the board has) makes Fabric Manager exit, and no GPU
//     joins the fabric. Other errors are warnings: Fabric Manager down
//     or stuck is the agent's fabric-manager probe's to find, not its
//     log's. The lines after a record that carry no stamp ("Message
//     payload details: …", "moduleId : 3") are details, not findings.
//   - Soft lockups, hung tasks, conntrack exhaustion, kernel BUGs and OOM
//     kills are node problems, not GPU ones: they feed EKS-style KernelReady
//     conditions, which belong to the node's kernel health, not to gpuheal's
//     GPU condition. gpuheal reports them as warnings and acts on none.
package detect
