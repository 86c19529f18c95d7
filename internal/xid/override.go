package xid

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/gpuheal/gpuheal/internal/finding"
)

// Override changes one code. Without Count it replaces the code's
// severity and/or action, and then also wins over what the line says
// (Fatal/Nonfatal on 144–150, the recovery action on 154, RST flags on
// 94/95). With Count it sets the code's threshold instead: Count
// occurrences on one GPU within Window escalate to Severity and Action;
// fields left empty keep the catalog's threshold values, and Action falls
// back to the code's action. To stop a catalog threshold from escalating,
// give it the code's own severity.
type Override struct {
	Severity finding.Severity `json:"severity,omitempty"`
	Action   finding.Action   `json:"action,omitempty"`
	Count    int              `json:"count,omitempty"`
	Window   time.Duration    `json:"window,omitempty"`
}

// rawOverride is the YAML/JSON form: window is a Go duration string.
type rawOverride struct {
	Severity string          `json:"severity,omitempty"`
	Action   string          `json:"action,omitempty"`
	Count    int             `json:"count,omitempty"`
	Window   json.RawMessage `json:"window,omitempty"`
}

// UnmarshalJSON reads {"severity":"fatal","count":5,"window":"10m"},
// rejecting unknown fields so that a typo is not silently ignored.
func (o *Override) UnmarshalJSON(b []byte) error {
	var r rawOverride
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return err
	}
	var out Override
	var err error
	if r.Severity != "" {
		if out.Severity, err = finding.ParseSeverity(r.Severity); err != nil {
			return fmt.Errorf("severity: %w", err)
		}
	}
	if r.Action != "" {
		if out.Action, err = finding.ParseAction(r.Action); err != nil {
			return fmt.Errorf("action: %w", err)
		}
	}
	out.Count = r.Count
	if len(r.Window) > 0 && string(r.Window) != "null" {
		var s string
		if json.Unmarshal(r.Window, &s) != nil {
			return fmt.Errorf("window: %s: want a duration with a unit, like 10m", r.Window)
		}
		if out.Window, err = time.ParseDuration(s); err != nil {
			return fmt.Errorf("window: %w", err)
		}
	}
	*o = out
	return nil
}

// MarshalJSON writes the form UnmarshalJSON reads.
func (o Override) MarshalJSON() ([]byte, error) {
	r := rawOverride{Severity: string(o.Severity), Action: string(o.Action), Count: o.Count}
	if o.Window != 0 {
		r.Window, _ = json.Marshal(o.Window.String())
	}
	return json.Marshal(r)
}

// ParseOverrides reads a YAML document of the form
//
//	xid:
//	  13: {severity: fatal, count: 5, window: 10m}
//	  31: {action: none}
//
// Values are checked for form here and for sense by WithOverrides. Write
// codes in decimal without leading zeros: YAML reads 013 as octal (11).
func ParseOverrides(data []byte) (map[uint64]Override, error) {
	var doc struct {
		XID map[string]json.RawMessage `json:"xid"`
	}
	if err := yaml.UnmarshalStrict(data, &doc); err != nil {
		return nil, fmt.Errorf("parsing Xid overrides: %w", err)
	}
	out := make(map[uint64]Override, len(doc.XID))
	for _, key := range slices.Sorted(maps.Keys(doc.XID)) {
		code, err := strconv.ParseUint(key, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("parsing Xid overrides: xid %q: not a code", key)
		}
		if _, dup := out[code]; dup {
			return nil, fmt.Errorf("parsing Xid overrides: xid %d: listed twice", code)
		}
		var o Override
		if err := json.Unmarshal(doc.XID[key], &o); err != nil {
			return nil, fmt.Errorf("parsing Xid overrides: xid %d: %w", code, err)
		}
		out[code] = o
	}
	return out, nil
}

// WithOverrides returns a copy of c with ov applied; c is unchanged.
// Every invalid override is reported, each error naming its code and
// field. Codes the catalog does not know may be overridden too (a new
// driver's Xid): they keep Known false.
func (c Catalog) WithOverrides(ov map[uint64]Override) (Catalog, error) {
	out := c.clone()
	var errs []error
	for _, code := range slices.Sorted(maps.Keys(ov)) {
		e, err := apply(c.Lookup(code), ov[code])
		if err != nil {
			errs = append(errs, fmt.Errorf("xid %d: %w", code, err))
			continue
		}
		out.entries[code] = e
		if ov[code].Count == 0 {
			out.pinned[code] = true
		}
	}
	if len(errs) > 0 {
		return Catalog{}, fmt.Errorf("applying Xid overrides: %w", errors.Join(errs...))
	}
	return out, nil
}

func apply(e Entry, o Override) (Entry, error) {
	if o.Severity != "" {
		if _, err := finding.ParseSeverity(string(o.Severity)); err != nil {
			return e, fmt.Errorf("severity: %w", err)
		}
	}
	if o.Action != "" {
		if _, err := finding.ParseAction(string(o.Action)); err != nil {
			return e, fmt.Errorf("action: %w", err)
		}
	}
	switch {
	case o.Count < 0:
		return e, fmt.Errorf("count: %d: must not be negative", o.Count)
	case o.Count > MaxCount:
		return e, fmt.Errorf("count: %d: at most %d", o.Count, MaxCount)
	case o.Window < 0:
		return e, fmt.Errorf("window: %v: must not be negative", o.Window)
	case o.Count == 0 && o.Window != 0:
		return e, fmt.Errorf("window: set without count")
	case o.Count == 0 && o.Severity == "" && o.Action == "":
		return e, fmt.Errorf("nothing to override: set severity, action or count")
	}
	if o.Count == 0 {
		if o.Severity != "" {
			e.Severity = o.Severity
		}
		if o.Action != "" {
			e.Action = o.Action
		}
		return e, nil
	}
	t := e.Threshold
	t.Count = o.Count
	if o.Window != 0 {
		t.Window = o.Window
	}
	if o.Severity != "" {
		t.Severity = o.Severity
	}
	if o.Action != "" {
		t.Action = o.Action
	}
	if t.Action == "" {
		t.Action = e.Action
	}
	switch {
	case t.Window == 0:
		return e, fmt.Errorf("window: required with count")
	case t.Severity == "":
		return e, fmt.Errorf("severity: required with count (the severity once count is reached)")
	}
	e.Threshold = t
	return e, nil
}
