package fleetsim

import (
	"fmt"
	"runtime"
	"time"
)

// DefaultStart is when traces start unless Options say otherwise: a fixed
// time, so that the same options always give the same bytes.
var DefaultStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Options say which fleet to simulate.
type Options struct {
	GPUs int
	Days float64
	Seed uint64
	// Preset is the failure rate and mix; LookupPreset("fleet") by default.
	Preset Preset
	// FailureRate, when positive, replaces the preset's failures per 1,000
	// GPU-hours (small test fleets need more failures to say anything).
	FailureRate float64
	// Start is the first sample's time (DefaultStart when zero).
	Start time.Time
	// Workers generating GPUs in parallel (GOMAXPROCS when 0). The output
	// does not depend on it.
	Workers int
	// Hazard makes boards differ in failure rate (lemons, rack position,
	// load); the zero Hazard is the homogeneous fleet.
	Hazard Hazard

	hazardNorm float64 // Hazard's normalisation, set by complete
}

func (o *Options) failureRate() float64 {
	if o.FailureRate > 0 {
		return o.FailureRate
	}
	return o.Preset.FailuresPer1000GPUHours
}

// complete fills defaults and checks the options.
func (o *Options) complete() error {
	if o.Preset.Name == "" {
		p, err := LookupPreset("fleet")
		if err != nil {
			return err
		}
		o.Preset = p
	}
	if o.Start.IsZero() {
		o.Start = DefaultStart
	}
	if o.Workers <= 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	switch {
	case o.GPUs < 1 || o.GPUs > 100_000:
		return fmt.Errorf("gpus %d: want 1..100000", o.GPUs)
	case !(o.Days > 0 && o.Days <= 366):
		return fmt.Errorf("days %v: want more than 0 and at most 366", o.Days)
	case o.FailureRate < 0:
		return fmt.Errorf("failure rate %v: must not be negative", o.FailureRate)
	case !(o.Preset.BenignScale >= 0):
		return fmt.Errorf("preset %q: benign scale %v must not be negative", o.Preset.Name, o.Preset.BenignScale)
	case len(o.Preset.Classes) == 0:
		return fmt.Errorf("preset %q: no failure classes", o.Preset.Name)
	case o.Start.Truncate(time.Second) != o.Start:
		return fmt.Errorf("start %s: must be whole seconds", o.Start)
	}
	if err := o.Hazard.Validate(); err != nil {
		return err
	}
	if !o.Hazard.Off() {
		o.hazardNorm = hazardNorm(o.Hazard, o.GPUs)
	}
	return nil
}
