package predict

import "time"

// FeatureSet versions the feature definitions below. A model file names
// the set it was trained on; Load refuses a model of another set, because
// the same position would mean a different number.
const FeatureSet = 1

// Interval is the slot width of every window: the agent's default 30 s
// collection interval. Samples closer together share a slot.
const Interval = 30 * time.Second

// Window lengths in slots, and the ring that holds the longest.
const (
	win5m   = 10
	win30m  = 60
	win1h   = 120
	win2h   = 240
	ringLen = win2h
)

// windows are the running sums State keeps, in this order.
var windows = [...]int{win5m, win30m, win1h, win2h}

// runGapSlots: a signal's run of activity ends after 30 min without events.
const runGapSlots = win30m

// sinceCapMinutes is "time since the last event" when there was none in a
// day, or none at all.
const sinceCapMinutes = 1440

// Signals are per-slot event counts: counter increments and Xids by group.
const (
	sigSBE = iota
	sigRemap
	sigPCIeReplay
	sigNVLinkCRC
	sigNVLinkRetry
	sigXidApp
	sigXidGSP
	sigXidMem
	sigXidOther
	numSignals
)

var signalNames = [numSignals]string{"sbe", "remap", "pcie_replay", "nvlink_crc", "nvlink_retry",
	"xid_app", "xid_gsp", "xid_mem", "xid_other"}

// signalFeatures are computed per signal, in this order: event counts in
// the last 5 min, 30 min, the 30 min before those, and 2 h; slots with
// events in the last 30 min; minutes since the last event; minutes since
// the current run of activity began (0 when none in the last 30 min).
var signalFeatures = [...]string{"5m", "30m", "prev_30m", "2h", "active_30m", "since_min", "run_min"}

// Offsets of the signal features.
const (
	sf5m = iota
	sf30m
	sfPrev30m
	sf2h
	sfActive30m
	sfSince
	sfRun
)

// Gauge and state features follow the signal features, in this order.
const (
	featTemperature = numSignals*len(signalFeatures) + iota
	featTemperatureRise2h
	featTemperatureRise30m
	featUtilizationMean30m
	featSWThermal30m
	featHWThermal30m
	featPCIeWidthLoss
	featPCIeGenLossBusy
	featNVLinkDown
	featRemapPending
	featRemappedRows
	featRecoveryAction
	// NumFeatures is the length of a feature vector.
	NumFeatures
)

var gaugeFeatureNames = [...]string{
	"temperature_c", "temperature_rise_2h_c", "temperature_rise_30m_c", "utilization_mean_30m",
	"sw_thermal_slots_30m", "hw_thermal_slots_30m", "pcie_width_loss", "pcie_gen_loss_busy",
	"nvlink_down", "remap_pending", "remapped_rows", "recovery_action",
}

// FeatureNames lists the features of FeatureSet in vector order. A model
// file carries this list and Load checks it.
func FeatureNames() []string {
	names := make([]string, 0, NumFeatures)
	for _, sig := range signalNames {
		for _, f := range signalFeatures {
			names = append(names, sig+"_"+f)
		}
	}
	return append(names, gaugeFeatureNames[:]...)
}

// xidSignal sorts an Xid into the group whose count is a feature. The
// groups follow NVIDIA's Xid catalog (internal/xid): application faults,
// the GPU System Processor, memory, and everything else (links, bus).
func xidSignal(code uint32) int {
	switch code {
	case 13, 31, 32, 43, 45, 68, 69, 109:
		return sigXidApp
	case 119, 120:
		return sigXidGSP
	case 48, 63, 64, 92, 94, 95, 140:
		return sigXidMem
	}
	return sigXidOther
}

// counterSignal maps each counter to the signal its increments feed; -1
// for counters that feed none (uncorrected ECC is the failure itself, and
// the aggregate counts duplicate the volatile ones).
var counterSignal = [NumCounters]int{
	CounterECCCorrected:            sigSBE,
	CounterECCUncorrected:          -1,
	CounterECCAggregateCorrected:   -1,
	CounterECCAggregateUncorrected: -1,
	CounterRemappedCorrectable:     sigRemap,
	CounterRemappedUncorrectable:   sigRemap,
	CounterPCIeReplay:              sigPCIeReplay,
	CounterNVLinkCRCFlit:           sigNVLinkCRC,
	CounterNVLinkCRCData:           sigNVLinkCRC,
	CounterNVLinkReplay:            sigNVLinkRetry,
	CounterNVLinkRecovery:          sigNVLinkRetry,
}

// Clock event bits the thermal features count (gpu.ClockEventSwThermal,
// gpu.ClockEventHwThermal, gpu.ClockEventGPUIdle).
const (
	clockSWThermal = 0x20
	clockHWThermal = 0x40
	clockGPUIdle   = 0x1
)

// slotOf is the slot number of a time: Unix seconds floored to Interval.
func slotOf(t time.Time) int64 {
	const w = int64(Interval / time.Second)
	u := t.Unix()
	if u < 0 {
		return (u - w + 1) / w
	}
	return u / w
}

// Quiet reports whether a feature vector shows nothing: no event of any
// signal in two hours, no thermal slowdown, no degraded link, no pending
// remap. Most of a fleet's samples are quiet; training samples them more
// sparsely than the rest.
func Quiet(f []float32) bool {
	for g := range numSignals {
		if f[g*len(signalFeatures)+sf2h] != 0 {
			return false
		}
	}
	return f[featSWThermal30m] == 0 && f[featHWThermal30m] == 0 && f[featPCIeWidthLoss] == 0 &&
		f[featPCIeGenLossBusy] == 0 && f[featNVLinkDown] == 0 && f[featRemapPending] == 0 &&
		!(f[featTemperatureRise2h] > 3)
}
