package fleetsim

import (
	"fmt"
	"slices"
	"time"
)

// Class is a failure class.
type Class string

// Failure classes the simulator produces.
const (
	ClassDBE     Class = "hbm-dbe"              // uncorrectable ECC (HBM or SRAM), Xid 48
	ClassRemap   Class = "row-remap-exhaustion" // no spare rows left, Xid 64
	ClassGSP     Class = "gsp-hang"             // GPU System Processor stops answering, Xid 119/120
	ClassBus     Class = "fell-off-bus"         // Xid 79
	ClassNVLink  Class = "nvlink-down"          // a link goes down, Xid 74
	ClassThermal Class = "thermal"              // cooling fails, thermal shutdown
)

// ClassSpec is how one class fails.
type ClassSpec struct {
	Class Class
	// Share of all GPU failures.
	Share float64
	// PrecursorProbability is the chance a failure of this class shows a
	// precursor at all; the rest fail out of the blue.
	PrecursorProbability float64
	// The precursor starts a log-normal time before the failure.
	LeadMedian time.Duration
	LeadSigma  float64
}

// Benign are the rates of episodes on GPUs that do not fail because of
// them, per GPU-day (chronic: share of boards).
type Benign struct {
	AppXidCrashLoops   float64 // Xid 13/31/43 from a crashing job
	SBEBursts          float64 // corrected ECC bursts
	RowRemaps          float64 // one row remapped, pending until a reset
	PCIeReplayBursts   float64
	NVLinkCRCBursts    float64
	ThermalExcursions  float64
	GSPTimeouts        float64 // isolated Xid 119s that recover
	ChronicSBEShare    float64 // boards with a steady trickle of corrected ECC
	ChronicReplayShare float64 // boards with a steady trickle of PCIe replays
	ChronicCRCShare    float64 // boards with a steady trickle of NVLink CRC errors
}

// Preset is a fleet's failure rate, failure mix and noise.
type Preset struct {
	Name        string
	Description string
	// FailuresPer1000GPUHours is the rate of GPU failures.
	FailuresPer1000GPUHours float64
	Classes                 []ClassSpec
	Benign                  Benign
	// BenignScale multiplies every benign rate and chronic share (1 in
	// the presets): a knob for asking how results depend on the assumed
	// noise, never for making a model look good.
	BenignScale float64
	// RepairMedian is the median time a failed slot is out of service
	// before a new board takes it (log-normal, sigma 0.6, at least 30 min).
	RepairMedian time.Duration
}

// The class mix follows the GPU-attributable interruptions of the Llama 3
// training run (the Llama 3 paper, "The Llama 3 Herd of Models" (Meta, 2024), Table 5): faulty GPU 148, GPU
// HBM3 72, GPU SRAM 19, GSP 17, thermal interface/sensor 6 — 262 of 419.
// No public figure splits them further, so these are assumptions: HBM3
// half double-bit errors and half row-remap exhaustion; SRAM errors
// counted as double-bit errors; "faulty GPU" 60 % fallen off the bus and
// 40 % NVLink. Shares: DBE (36+19)/262, remap 36/262, GSP 17/262, bus
// 89/262, NVLink 59/262, thermal 6/262.
//
// Precursor probabilities and leads are assumptions too (no public
// numbers): memory failures most often announce themselves (corrected
// errors, remaps), row-remap exhaustion nearly always does, link and bus
// failures often, GSP hangs less often. About 26 % of failures come with
// no precursor at all, which caps any predictor's recall near 0.74.
var defaultClasses = []ClassSpec{
	{ClassDBE, 55.0 / 262, 0.60, 60 * time.Minute, 1.0},
	{ClassRemap, 36.0 / 262, 0.90, 3 * time.Hour, 0.8},
	{ClassGSP, 17.0 / 262, 0.70, 30 * time.Minute, 0.9},
	{ClassBus, 89.0 / 262, 0.65, 45 * time.Minute, 1.0},
	{ClassNVLink, 59.0 / 262, 0.75, 40 * time.Minute, 1.0},
	{ClassThermal, 6.0 / 262, 0.85, 90 * time.Minute, 0.7},
}

// The benign rates are assumptions chosen before any model was trained
// and not tuned since: in total about 40 benign episodes for every
// failure at the fleet preset's rate, at intensities that overlap the
// precursors' (see episode.go).
var defaultBenign = Benign{
	AppXidCrashLoops:   0.05,
	SBEBursts:          0.01,
	RowRemaps:          0.004,
	PCIeReplayBursts:   0.02,
	NVLinkCRCBursts:    0.02,
	ThermalExcursions:  0.01,
	GSPTimeouts:        0.003,
	ChronicSBEShare:    0.03,
	ChronicReplayShare: 0.03,
	ChronicCRCShare:    0.02,
}

// Presets: the seed article's fleet-wide rate, and the training-job view
// of the Llama 3 run.
var presets = []Preset{
	{
		Name:                    "fleet",
		Description:             "fleet-wide: 0.12 GPU failures per 1,000 GPU-hours (the seed article's 200-node EKS fleet, non-interrupting faults included)",
		FailuresPer1000GPUHours: 0.12,
		Classes:                 defaultClasses,
		Benign:                  defaultBenign,
		BenignScale:             1,
		RepairMedian:            3 * time.Hour,
	},
	{
		Name: "llama3",
		Description: "training-job view: 419 unexpected interruptions / (16,384 GPUs × 54 days) ≈ 0.020 per 1,000 GPU-hours " +
			"(Llama 3; all interruptions, of which 262 were GPU-attributable)",
		FailuresPer1000GPUHours: 419.0 / (16384 * 54 * 24) * 1000,
		Classes:                 defaultClasses,
		Benign:                  defaultBenign,
		BenignScale:             1,
		RepairMedian:            3 * time.Hour,
	},
}

// PresetNames lists the presets.
func PresetNames() []string {
	names := make([]string, 0, len(presets))
	for _, p := range presets {
		names = append(names, p.Name)
	}
	return names
}

// LookupPreset returns the preset with that name.
func LookupPreset(name string) (Preset, error) {
	i := slices.IndexFunc(presets, func(p Preset) bool { return p.Name == name })
	if i < 0 {
		return Preset{}, fmt.Errorf("preset %q: want one of %v", name, PresetNames())
	}
	p := presets[i]
	p.Classes = slices.Clone(p.Classes)
	return p, nil
}

// scaled returns b with every rate and share multiplied by k.
func (b Benign) scaled(k float64) Benign {
	return Benign{
		AppXidCrashLoops: b.AppXidCrashLoops * k, SBEBursts: b.SBEBursts * k, RowRemaps: b.RowRemaps * k,
		PCIeReplayBursts: b.PCIeReplayBursts * k, NVLinkCRCBursts: b.NVLinkCRCBursts * k,
		ThermalExcursions: b.ThermalExcursions * k, GSPTimeouts: b.GSPTimeouts * k,
		ChronicSBEShare: min(1, b.ChronicSBEShare*k), ChronicReplayShare: min(1, b.ChronicReplayShare*k),
		ChronicCRCShare: min(1, b.ChronicCRCShare*k),
	}
}
