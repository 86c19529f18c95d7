// Package gpu is the narrow interface between the agent and the GPUs of a
// node. Backends (nvml, smi, sim) fill the same typed snapshot; everything
// else in the agent depends only on this package.
package gpu

import (
	"context"
	"time"

	"github.com/gpuheal/gpuheal/internal/fabric"
)

// Source reads every GPU of the node. Implementations must time-box each
// hardware call: one failing GPU must never stall the others, and errors on a
// single GPU belong in that GPU's Errors, not in the returned error. The
// returned error is reserved for "the whole backend is unusable" (no driver,
// no library, nvidia-smi missing).
type Source interface {
	// Name is the backend name: "nvml", "smi" or "sim".
	Name() string
	// Snapshot reads all GPUs and node-level facts once.
	Snapshot(ctx context.Context) (*NodeSnapshot, error)
	// Close releases the backend (NVML shutdown, event sets).
	Close() error
}

// Value kinds. Unsupported or unreadable values are never reported as zero:
// every optional reading is a pointer, and nil means "not supported / N/A".
// The helpers below keep backend code short.

// U64 returns a pointer to v.
func U64(v uint64) *uint64 { return &v }

// F64 returns a pointer to v.
func F64(v float64) *float64 { return &v }

// Bool returns a pointer to v.
func Bool(v bool) *bool { return &v }

// Str returns a pointer to v.
func Str(v string) *string { return &v }

// NodeSnapshot is one reading of the whole node.
type NodeSnapshot struct {
	Time    time.Time `json:"time"`
	Backend string    `json:"backend"`

	DriverVersion     string `json:"driverVersion,omitempty"`
	CUDADriverVersion string `json:"cudaDriverVersion,omitempty"`
	// KernelModuleVersion is the version of the loaded nvidia.ko as printed
	// in /proc/driver/nvidia/version; a mismatch with DriverVersion means the
	// user-space library and kernel module disagree (a half-done upgrade).
	KernelModuleVersion string `json:"kernelModuleVersion,omitempty"`
	KernelRelease       string `json:"kernelRelease,omitempty"`

	// ExpectedGPUs comes from a flag or the node's nvidia.com/gpu.count
	// label; 0 means unknown. FoundGPUs counts the GPUs the backend saw.
	ExpectedGPUs int `json:"expectedGPUs"`
	FoundGPUs    int `json:"foundGPUs"`

	// DeviceNodes lists /dev/nvidia* character devices present on the host.
	DeviceNodes []string `json:"deviceNodes,omitempty"`
	// NVSwitch is true on systems with NVSwitches (HGX 8-GPU boards), where
	// nvidia-fabricmanager must run for NVLink to work.
	NVSwitch bool `json:"nvSwitch"`
	// FabricManager is "running", "stopped", "not-installed" or "" when the
	// node has no NVSwitch.
	FabricManager string `json:"fabricManager,omitempty"`

	GPUs []GPUSnapshot `json:"gpus"`
	// Fabric is the node's RDMA network (InfiniBand, RoCE, EFA); nil when
	// the agent did not read it.
	Fabric *fabric.Snapshot `json:"fabric,omitempty"`
	// Errors are node-level query failures (e.g. reading the driver version).
	Errors []QueryError `json:"errors,omitempty"`
}

// GPUSnapshot is one reading of one GPU.
type GPUSnapshot struct {
	Index    int     `json:"index"`
	UUID     string  `json:"uuid"`
	PCIBusID string  `json:"pciBusId"` // normalized: 0000:3b:00.0
	Name     string  `json:"name"`
	Serial   string  `json:"serial,omitempty"`
	VBIOS    string  `json:"vbios,omitempty"`
	MinorNum *uint64 `json:"minorNumber,omitempty"`

	// Missing is true when the GPU is known (expected, or seen before) but
	// did not answer: fallen off the bus, or gone from the driver.
	Missing bool `json:"missing,omitempty"`

	UtilizationGPUPercent    *float64 `json:"utilizationGpuPercent,omitempty"`
	UtilizationMemoryPercent *float64 `json:"utilizationMemoryPercent,omitempty"`
	MemoryUsedBytes          *uint64  `json:"memoryUsedBytes,omitempty"`
	MemoryTotalBytes         *uint64  `json:"memoryTotalBytes,omitempty"`

	TemperatureCelsius       *float64 `json:"temperatureCelsius,omitempty"`
	MemoryTemperatureCelsius *float64 `json:"memoryTemperatureCelsius,omitempty"`
	PowerDrawWatts           *float64 `json:"powerDrawWatts,omitempty"`
	PowerLimitWatts          *float64 `json:"powerLimitWatts,omitempty"`
	SMClockMHz               *float64 `json:"smClockMHz,omitempty"`
	MemoryClockMHz           *float64 `json:"memoryClockMHz,omitempty"`

	// ClockEventReasons is NVML's clocks event (throttle) reasons bitmask;
	// see the ClockEvent* constants.
	ClockEventReasons *uint64 `json:"clockEventReasons,omitempty"`

	ECCModeEnabled *bool         `json:"eccModeEnabled,omitempty"`
	ECC            ECCCounts     `json:"ecc"`
	RetiredPages   *RetiredPages `json:"retiredPages,omitempty"`
	RemappedRows   *RemappedRows `json:"remappedRows,omitempty"`

	PCIe   PCIe     `json:"pcie"`
	NVLink []NVLink `json:"nvlink,omitempty"`

	// XidEvents are Xid events seen since the previous snapshot (NVML
	// event set, or the sim). The kernel log is the other Xid source.
	XidEvents []XidEvent `json:"xidEvents,omitempty"`
	// XidTotals counts every Xid seen by this backend since start, by code.
	XidTotals map[uint64]uint64 `json:"xidTotals,omitempty"`

	// RecoveryAction is NVML field 230 (FI_DEV_GET_GPU_RECOVERY_ACTION) or
	// nvidia-smi's gpu_recovery_action; nil when unsupported.
	RecoveryAction *RecoveryAction `json:"recoveryAction,omitempty"`
	// ResetRequired and DrainAndResetRecommended come from nvidia-smi's
	// gpu_reset_status (newer drivers).
	ResetRequired            *bool `json:"resetRequired,omitempty"`
	DrainAndResetRecommended *bool `json:"drainAndResetRecommended,omitempty"`

	PersistenceMode *bool       `json:"persistenceMode,omitempty"`
	MIGEnabled      *bool       `json:"migEnabled,omitempty"`
	MIGDevices      []MIGDevice `json:"migDevices,omitempty"`

	// FabricState and FabricStatus come from nvidia-smi's <fabric> block
	// (e.g. "Completed" / "Success") on NVSwitch systems.
	FabricState  string `json:"fabricState,omitempty"`
	FabricStatus string `json:"fabricStatus,omitempty"`

	// Errors are per-GPU query failures in this snapshot.
	Errors []QueryError `json:"errors,omitempty"`
}

// Clock event (throttle) reason bits, as NVML defines them.
const (
	ClockEventGPUIdle      uint64 = 0x1
	ClockEventAppSetting   uint64 = 0x2
	ClockEventSwPowerCap   uint64 = 0x4
	ClockEventHwSlowdown   uint64 = 0x8
	ClockEventSyncBoost    uint64 = 0x10
	ClockEventSwThermal    uint64 = 0x20
	ClockEventHwThermal    uint64 = 0x40
	ClockEventHwPowerBrake uint64 = 0x80
	ClockEventDisplayClock uint64 = 0x100
)

// ECCCounts holds corrected (single-bit) and uncorrected (double-bit) ECC
// error counts; volatile counts reset at driver reload, aggregate persist.
type ECCCounts struct {
	VolatileCorrected    *uint64 `json:"volatileCorrected,omitempty"`
	VolatileUncorrected  *uint64 `json:"volatileUncorrected,omitempty"`
	AggregateCorrected   *uint64 `json:"aggregateCorrected,omitempty"`
	AggregateUncorrected *uint64 `json:"aggregateUncorrected,omitempty"`
}

// RetiredPages is the pre-Ampere page retirement state.
type RetiredPages struct {
	SingleBit uint64 `json:"singleBit"`
	DoubleBit uint64 `json:"doubleBit"`
	Pending   bool   `json:"pending"`
}

// RemappedRows is the Ampere-and-later row remapping state.
type RemappedRows struct {
	Correctable   uint64 `json:"correctable"`
	Uncorrectable uint64 `json:"uncorrectable"`
	Pending       bool   `json:"pending"`
	Failure       bool   `json:"failure"`
}

// PCIe link state and the replay counter (a rising replay count is a
// precursor of a GPU falling off the bus).
type PCIe struct {
	ReplayCounter    *uint64 `json:"replayCounter,omitempty"`
	LinkGenCurrent   *uint64 `json:"linkGenCurrent,omitempty"`
	LinkGenMax       *uint64 `json:"linkGenMax,omitempty"`
	LinkWidthCurrent *uint64 `json:"linkWidthCurrent,omitempty"`
	LinkWidthMax     *uint64 `json:"linkWidthMax,omitempty"`
}

// NVLink is one NVLink link of a GPU.
type NVLink struct {
	Link     int     `json:"link"`
	Active   bool    `json:"active"`
	CRCFlit  *uint64 `json:"crcFlit,omitempty"`
	CRCData  *uint64 `json:"crcData,omitempty"`
	Replay   *uint64 `json:"replay,omitempty"`
	Recovery *uint64 `json:"recovery,omitempty"`
}

// XidEvent is one Xid error reported for a GPU.
type XidEvent struct {
	Xid  uint64    `json:"xid"`
	Time time.Time `json:"time"`
	// Data is the event's extra data (e.g. the new recovery action for 154).
	Data uint64 `json:"data,omitempty"`
}

// MIGDevice is one MIG instance of a GPU in MIG mode.
type MIGDevice struct {
	Index             int     `json:"index"`
	GPUInstanceID     int     `json:"gpuInstanceId"`
	ComputeInstanceID int     `json:"computeInstanceId"`
	MemoryUsedBytes   *uint64 `json:"memoryUsedBytes,omitempty"`
	MemoryTotalBytes  *uint64 `json:"memoryTotalBytes,omitempty"`
	ECCCorrected      *uint64 `json:"eccCorrected,omitempty"`
	ECCUncorrected    *uint64 `json:"eccUncorrected,omitempty"`
}

// RecoveryAction is the driver's recommended recovery action (NVML field
// 230; Xid 154 announces changes).
type RecoveryAction uint64

// The values NVML defines for field 230.
const (
	RecoveryNone          RecoveryAction = 0
	RecoveryGPUReset      RecoveryAction = 1
	RecoveryNodeReboot    RecoveryAction = 2
	RecoveryDrainP2P      RecoveryAction = 3
	RecoveryDrainAndReset RecoveryAction = 4
)

// String names the action as nvidia-smi prints it.
func (a RecoveryAction) String() string {
	switch a {
	case RecoveryNone:
		return "None"
	case RecoveryGPUReset:
		return "GPU Reset"
	case RecoveryNodeReboot:
		return "Node Reboot"
	case RecoveryDrainP2P:
		return "Drain P2P"
	case RecoveryDrainAndReset:
		return "Drain and Reset"
	default:
		return "Unknown"
	}
}

// QueryError records one failed or timed-out query.
type QueryError struct {
	Query   string `json:"query"`
	Message string `json:"message"`
	Timeout bool   `json:"timeout,omitempty"`
}
