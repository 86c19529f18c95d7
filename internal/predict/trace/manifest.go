package trace

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// ManifestFormat and ManifestVersion identify a trace directory.
const (
	ManifestFile    = "manifest.json"
	ManifestFormat  = "gpuheal-fleet-trace"
	ManifestVersion = 1
)

// Manifest describes a trace directory: where it came from, its GPU files
// and its labels.
type Manifest struct {
	Format  string `json:"format"`
	Version int    `json:"version"`
	// Source says what made the traces, e.g. "fleetsim/1 preset=fleet".
	Source          string    `json:"source"`
	Preset          string    `json:"preset,omitempty"`
	Seed            uint64    `json:"seed"`
	GPUs            int       `json:"gpus"`
	Days            float64   `json:"days"`
	Start           time.Time `json:"start"`
	IntervalSeconds int       `json:"intervalSeconds"`
	// FailuresPer1000GPUHours is the failure rate the generator drew from.
	FailuresPer1000GPUHours float64 `json:"failuresPer1000GpuHours,omitempty"`
	// Bytes is the size of all GPU files together.
	Bytes    int64     `json:"bytes"`
	Failures []Failure `json:"failures"`
	// Episodes are what a generator injected besides failures (benign
	// bursts, chronic conditions): for explaining false alarms only.
	Episodes []Episode `json:"episodes,omitempty"`
}

// Failure is one GPU failure: the label. At Time the GPU's fatal signal
// appears (double-bit error, Xid 79, link down, …); from then until
// RepairedAt the slot is out of service and not evaluated; after it a new
// board with fresh counters fills the slot.
type Failure struct {
	GPU        int       `json:"gpu"`
	Time       time.Time `json:"time"`
	RepairedAt time.Time `json:"repairedAt"`
	Class      string    `json:"class"`
	// PrecursorStart is when the failure's precursor began; nil when the
	// failure came with no precursor at all.
	PrecursorStart *time.Time `json:"precursorStart,omitempty"`
}

// Episode is a stretch of injected behaviour on one GPU that is not a
// failure, e.g. a benign burst of corrected ECC errors.
type Episode struct {
	GPU   int       `json:"gpu"`
	Kind  string    `json:"kind"`
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
}

// GPUFile is the name of GPU i's file in a trace directory.
func GPUFile(i int) string { return fmt.Sprintf("gpu-%05d.ght", i) }

// Interval returns the sample interval.
func (m *Manifest) Interval() time.Duration {
	return time.Duration(m.IntervalSeconds) * time.Second
}

// WriteManifest writes m to dir/manifest.json, indented, failures and
// episodes sorted so equal traces give equal bytes.
func WriteManifest(dir string, m *Manifest) error {
	slices.SortFunc(m.Failures, func(a, b Failure) int { return cmpGPUTime(a.GPU, b.GPU, a.Time, b.Time) })
	slices.SortFunc(m.Episodes, func(a, b Episode) int { return cmpGPUTime(a.GPU, b.GPU, a.Start, b.Start) })
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, ManifestFile), append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing trace manifest: %w", err)
	}
	return nil
}

func cmpGPUTime(ga, gb int, ta, tb time.Time) int {
	if ga != gb {
		return ga - gb
	}
	return ta.Compare(tb)
}

// ReadManifest reads and checks dir/manifest.json.
func ReadManifest(dir string) (*Manifest, error) {
	path := filepath.Join(dir, ManifestFile)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading trace manifest: %w", err)
	}
	m, err := ParseManifest(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// ParseManifest decodes and checks a manifest.
func ParseManifest(data []byte) (*Manifest, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var m Manifest
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("decoding JSON: %w", err)
	}
	switch {
	case m.Format != ManifestFormat:
		return nil, fmt.Errorf("format %q: want %q", m.Format, ManifestFormat)
	case m.Version != ManifestVersion:
		return nil, fmt.Errorf("version %d: this gpuheal reads version %d", m.Version, ManifestVersion)
	case m.GPUs < 0 || m.GPUs > 1_000_000:
		return nil, fmt.Errorf("gpus %d: want 0..1000000", m.GPUs)
	case m.IntervalSeconds <= 0 || m.IntervalSeconds > 86400:
		return nil, fmt.Errorf("intervalSeconds %d: want 1..86400", m.IntervalSeconds)
	}
	for i, f := range m.Failures {
		switch {
		case f.GPU < 0 || f.GPU >= m.GPUs:
			return nil, fmt.Errorf("failures[%d].gpu %d: want 0..%d", i, f.GPU, m.GPUs-1)
		case f.RepairedAt.Before(f.Time):
			return nil, fmt.Errorf("failures[%d].repairedAt: before its time", i)
		case f.PrecursorStart != nil && f.PrecursorStart.After(f.Time):
			return nil, fmt.Errorf("failures[%d].precursorStart: after its time", i)
		}
	}
	return &m, nil
}
