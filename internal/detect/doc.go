// Package detect turns kernel-log messages into findings.
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
//   - Soft lockups, hung tasks, conntrack exhaustion, kernel BUGs and OOM
//     kills are node problems, not GPU ones: they feed EKS-style KernelReady
//     conditions, which belong to the node's kernel health, not to gpuheal's
//     GPU condition. gpuheal reports them as warnings and acts on none.
package detect
