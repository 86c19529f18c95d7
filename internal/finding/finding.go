// Package finding is the vocabulary shared by everything that detects a
// problem (kernel log, nvidia-smi dumps, telemetry rules) and everything
// that acts on one (analyzer, controller, CLI).
package finding

import (
	"fmt"
	"time"
)

// Severity of a finding, from worst to least.
type Severity string

// The severities, worst first.
const (
	Fatal   Severity = "fatal"
	Warning Severity = "warning"
	Info    Severity = "info"
	// Unknown is for codes the catalog does not know (a new driver's Xid):
	// reported, never dropped, and treated between warning and info.
	Unknown Severity = "unknown"
)

// Rank orders severities: higher is worse.
func (s Severity) Rank() int {
	switch s {
	case Fatal:
		return 4
	case Warning:
		return 3
	case Unknown:
		return 2
	case Info:
		return 1
	}
	return 0
}

// ParseSeverity accepts the four names.
func ParseSeverity(s string) (Severity, error) {
	switch Severity(s) {
	case Fatal, Warning, Info, Unknown:
		return Severity(s), nil
	}
	return "", fmt.Errorf("severity %q: want fatal, warning, info or unknown", s)
}

// Action is the recommended remediation; one vocabulary everywhere.
type Action string

// The actions, from lightest to heaviest (Rank).
const (
	ActionNone       Action = "none"
	ActionRestartApp Action = "restart-app"
	ActionResetGPU   Action = "reset-gpu"
	ActionReboot     Action = "reboot"
	ActionReplace    Action = "replace"
)

// Rank orders actions by how much they disrupt: higher is heavier.
func (a Action) Rank() int {
	switch a {
	case ActionNone:
		return 0
	case ActionRestartApp:
		return 1
	case ActionResetGPU:
		return 2
	case ActionReboot:
		return 3
	case ActionReplace:
		return 4
	}
	return -1
}

// ParseAction accepts the five names.
func ParseAction(s string) (Action, error) {
	a := Action(s)
	if a.Rank() < 0 {
		return "", fmt.Errorf("action %q: want none, restart-app, reset-gpu, reboot or replace", s)
	}
	return a, nil
}

// Finding is one observed problem.
type Finding struct {
	// Source is where it was seen: "kmsg", "smi", "nvml", "sim".
	Source string `json:"source"`
	// Code names the kind: XID79, SXID, PCIE_AER, GPU_FELL_OFF_BUS,
	// DRIVER_LOAD_FAILED, SOFT_LOCKUP, HUNG_TASK, CONNTRACK_FULL,
	// KERNEL_BUG, OOM_KILL, DBE, ROW_REMAP_FAILURE, the fabric's MLX5_*,
	// EFA_* and FM_*, ...
	Code string `json:"code"`
	// Xid is set for Xid findings.
	Xid uint64 `json:"xid,omitempty"`
	// GPU is the normalized PCI bus id (0000:3b:00.0) when known.
	GPU string `json:"gpu,omitempty"`
	// Device names the device a finding is about when it is not a GPU:
	// a network adapter or NVSwitch of the fabric, by its normalized PCI
	// bus id, or by its RDMA device name when the line gives no address.
	// Kept apart from GPU so that nothing meant for a GPU (a reset, the
	// GPU's condition) is aimed at a NIC; empty for GPU and node findings.
	Device   string   `json:"device,omitempty"`
	Severity Severity `json:"severity"`
	Action   Action   `json:"action"`
	// Time is when the kernel (or tool) reported it; zero when unknown.
	Time    time.Time `json:"time,omitzero"`
	Message string    `json:"message"`
}
