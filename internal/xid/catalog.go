// Package xid is gpuheal's catalog of NVIDIA Xid codes: for each code, what
// it means, how bad it is and what to do about it by default. The catalog
// is data (catalog.yaml, embedded) because sources disagree and users must
// be able to override any code; see WithOverrides. Codes whose meaning
// depends on the text of the line (94/95, 144–150, 154) are resolved by
// Classify; repeats are counted by Counter.
package xid

import (
	_ "embed"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/gpuheal/gpuheal/internal/finding"
)

//go:embed catalog.yaml
var catalogYAML []byte

// MaxCount bounds a threshold's count, and so the occurrences Counter
// keeps per code and GPU.
const MaxCount = 1000

// Threshold escalates a code that repeats on one GPU: once Count
// occurrences fall within Window, findings take Severity and Action.
// The zero Threshold (Count 0) never escalates.
type Threshold struct {
	Count    int
	Window   time.Duration
	Severity finding.Severity
	Action   finding.Action
}

// Entry is what the catalog says about one code.
type Entry struct {
	Code        uint64
	Name        string
	Description string
	Severity    finding.Severity
	Action      finding.Action
	// HardwareAttributable says the code usually means the GPU (or its
	// links) is at fault rather than the application or driver.
	HardwareAttributable bool
	Threshold            Threshold
	// Known reports whether the catalog lists the code. Unknown codes (a
	// newer driver's) get severity unknown and action none: reported,
	// never dropped.
	Known bool
}

// Catalog maps codes to entries. It is immutable once built, so one value
// can be shared by goroutines; the zero Catalog knows no code.
type Catalog struct {
	entries map[uint64]Entry
	// pinned codes had their severity or action set by an override,
	// which then wins over what the line says (Classify).
	pinned map[uint64]bool
}

var defaultCatalog = sync.OnceValues(func() (Catalog, error) { return Parse(catalogYAML) })

// Default is the embedded catalog. The embedded file is part of the
// build and TestDefault parses it, so a parse error here is a programming
// error, not a runtime condition.
func Default() Catalog {
	c, err := defaultCatalog()
	if err != nil {
		panic("xid: embedded catalog.yaml: " + err.Error())
	}
	return c
}

// Lookup returns the entry for code; unknown codes get an entry with
// severity unknown, action none and Known false.
func (c Catalog) Lookup(code uint64) Entry {
	if e, ok := c.entries[code]; ok {
		return e
	}
	return Entry{Code: code, Severity: finding.Unknown, Action: finding.ActionNone}
}

// Codes lists the known codes in ascending order.
func (c Catalog) Codes() []uint64 {
	codes := make([]uint64, 0, len(c.entries))
	for code, e := range c.entries {
		if e.Known {
			codes = append(codes, code)
		}
	}
	slices.Sort(codes)
	return codes
}

// rawEntry is one catalog.yaml item before validation.
type rawEntry struct {
	Code                 *uint64       `json:"code"`
	Name                 string        `json:"name"`
	Description          string        `json:"description"`
	Severity             string        `json:"severity"`
	Action               string        `json:"action"`
	HardwareAttributable bool          `json:"hardwareAttributable"`
	Threshold            *rawThreshold `json:"threshold,omitempty"`
}

type rawThreshold struct {
	Count    int    `json:"count"`
	Window   string `json:"window"`
	Severity string `json:"severity"`
	Action   string `json:"action"`
}

// Parse reads a catalog in catalog.yaml's format. Unknown fields,
// duplicate codes and bad values are errors naming the code and field.
func Parse(data []byte) (Catalog, error) {
	var raw []rawEntry
	if err := yaml.UnmarshalStrict(data, &raw); err != nil {
		return Catalog{}, fmt.Errorf("parsing Xid catalog: %w", err)
	}
	c := Catalog{entries: make(map[uint64]Entry, len(raw))}
	for i, r := range raw {
		if r.Code == nil {
			return Catalog{}, fmt.Errorf("parsing Xid catalog: item %d: code: required", i)
		}
		e, err := r.entry()
		if err != nil {
			return Catalog{}, fmt.Errorf("parsing Xid catalog: xid %d: %w", *r.Code, err)
		}
		if _, dup := c.entries[e.Code]; dup {
			return Catalog{}, fmt.Errorf("parsing Xid catalog: xid %d: listed twice", e.Code)
		}
		c.entries[e.Code] = e
	}
	return c, nil
}

func (r rawEntry) entry() (Entry, error) {
	if r.Name == "" {
		return Entry{}, fmt.Errorf("name: required")
	}
	sev, err := finding.ParseSeverity(r.Severity)
	if err != nil {
		return Entry{}, fmt.Errorf("severity: %w", err)
	}
	act, err := finding.ParseAction(r.Action)
	if err != nil {
		return Entry{}, fmt.Errorf("action: %w", err)
	}
	e := Entry{
		Code: *r.Code, Name: r.Name, Description: r.Description,
		Severity: sev, Action: act, HardwareAttributable: r.HardwareAttributable, Known: true,
	}
	if t := r.Threshold; t != nil {
		w, err := time.ParseDuration(t.Window)
		if err != nil {
			return Entry{}, fmt.Errorf("threshold: window: %w", err)
		}
		e.Threshold = Threshold{Count: t.Count, Window: w}
		if e.Threshold.Severity, err = finding.ParseSeverity(t.Severity); err != nil {
			return Entry{}, fmt.Errorf("threshold: severity: %w", err)
		}
		if e.Threshold.Action, err = finding.ParseAction(t.Action); err != nil {
			return Entry{}, fmt.Errorf("threshold: action: %w", err)
		}
		if err := checkThreshold(e.Threshold); err != nil {
			return Entry{}, fmt.Errorf("threshold: %w", err)
		}
	}
	return e, nil
}

// checkThreshold holds the rules a complete threshold must meet.
func checkThreshold(t Threshold) error {
	switch {
	case t.Count < 1 || t.Count > MaxCount:
		return fmt.Errorf("count: %d: want 1–%d", t.Count, MaxCount)
	case t.Window <= 0:
		return fmt.Errorf("window: %v: must be above 0", t.Window)
	}
	return nil
}

// clone copies c so that WithOverrides never changes a shared catalog.
func (c Catalog) clone() Catalog {
	out := Catalog{entries: maps.Clone(c.entries), pinned: maps.Clone(c.pinned)}
	if out.entries == nil {
		out.entries = map[uint64]Entry{}
	}
	if out.pinned == nil {
		out.pinned = map[uint64]bool{}
	}
	return out
}
