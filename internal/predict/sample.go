package predict

import (
	"math"
	"time"
)

// Sample is one reading of one GPU: the subset of the agent's exported
// fields (docs/metrics.md) that the predictor and the baseline rules read.
type Sample struct {
	Time time.Time
	// Missing: the GPU did not answer (fallen off the bus, hung GSP). Its
	// other readings are then meaningless and State ignores them.
	Missing bool

	// Gauges are indexed by the Gauge* constants; NaN means "not reported".
	Gauges [NumGauges]float32

	ClockEventReasons uint64 // NVML bit mask (gpu.ClockEvent*)
	RecoveryAction    uint8  // NVML field 230
	// PCIe link state; 0 means unknown.
	PCIeLinkGen, PCIeLinkGenMax     uint8
	PCIeLinkWidth, PCIeLinkWidthMax uint8
	// NVLink links active and links the GPU has.
	NVLinkUp, NVLinkTotal uint8

	RemappedRowsPending bool
	RemappedRowsFailure bool

	// Counters are the driver's cumulative counts, indexed by the Counter*
	// constants. Bit i of CountersRead says Counters[i] was read in this
	// sample; an unread counter keeps its previous value in State. A
	// counter that goes down (driver reload) restarts from zero.
	Counters     [NumCounters]uint64
	CountersRead uint16

	// Xids lists the Xid codes seen since the previous sample, one entry
	// per event.
	Xids []uint32
}

// Gauge indices into Sample.Gauges.
const (
	GaugeUtilizationPercent = iota
	GaugeMemoryUsedMiB
	GaugeTemperatureC
	GaugeMemoryTemperatureC
	GaugePowerW
	GaugeSMClockMHz
	NumGauges
)

// Counter indices into Sample.Counters.
const (
	CounterECCCorrected   = iota // volatile
	CounterECCUncorrected        // volatile
	CounterECCAggregateCorrected
	CounterECCAggregateUncorrected
	CounterRemappedCorrectable
	CounterRemappedUncorrectable
	CounterPCIeReplay
	// NVLink counters are summed over the GPU's links, as the analyzer's
	// delta variables sum them.
	CounterNVLinkCRCFlit
	CounterNVLinkCRCData
	CounterNVLinkReplay
	CounterNVLinkRecovery
	NumCounters
)

// AllCountersRead is the CountersRead value of a sample with every counter.
const AllCountersRead = uint16(1)<<NumCounters - 1

// GaugeNames and CounterNames name the indices, for trace files and errors.
var (
	GaugeNames = [NumGauges]string{"utilization_percent", "memory_used_mib", "temperature_celsius",
		"memory_temperature_celsius", "power_watts", "sm_clock_mhz"}
	CounterNames = [NumCounters]string{"ecc_corrected", "ecc_uncorrected", "ecc_aggregate_corrected",
		"ecc_aggregate_uncorrected", "remapped_rows_correctable", "remapped_rows_uncorrectable",
		"pcie_replay", "nvlink_crc_flit", "nvlink_crc_data", "nvlink_replay", "nvlink_recovery"}
)

// NaN is the value of a gauge the driver does not report.
var NaN = float32(math.NaN())
