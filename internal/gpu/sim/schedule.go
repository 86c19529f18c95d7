package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// Schedule is a list of timed faults, in file order.
//
// The YAML form is a list; each entry has exactly one of
//
//	at:    duration from the node's start ("90s", "5m")
//	after: duration after the previous entry in the file
//
// and
//
//	node:   node name, or "*" for every node (default "*")
//	gpu:    GPU index (default 0; ignored by node-level kinds)
//	fault:  a Kind
//	params: map of scalars (strings, numbers, booleans)
//
// "after" counts from the previous entry whatever its node, so one file can
// choreograph several nodes.
type Schedule []Entry

// Entry is one scheduled fault.
type Entry struct {
	At    time.Duration `json:"at"` // from the node's start
	Node  string        `json:"node"`
	Fault Fault         `json:"fault"`
}

// ForNode returns the entries for node (its own and "*"), in time order;
// entries due at the same time keep their file order.
func (s Schedule) ForNode(node string) Schedule {
	var out Schedule
	for _, e := range s {
		if e.Node == "*" || e.Node == node {
			out = append(out, e)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At < out[j].At })
	return out
}

// Limits that keep a hostile or broken file from costing much.
const (
	maxScheduleBytes   = 1 << 20
	maxScheduleEntries = 10_000
)

var entryFields = []string{"after", "at", "fault", "gpu", "node", "params"}

// LoadSchedule reads a YAML schedule. Errors name the entry (entries[i],
// counted from 0) and the field.
func LoadSchedule(r io.Reader) (Schedule, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxScheduleBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading schedule: %w", err)
	}
	if len(data) > maxScheduleBytes {
		return nil, fmt.Errorf("schedule: larger than %d bytes", maxScheduleBytes)
	}
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, fmt.Errorf("schedule: %w", err)
	}
	var raw []map[string]json.RawMessage
	if err := json.Unmarshal(js, &raw); err != nil {
		return nil, fmt.Errorf("schedule: want a list of entries with fields %s", strings.Join(entryFields, ", "))
	}
	if len(raw) > maxScheduleEntries {
		return nil, fmt.Errorf("schedule: %d entries, at most %d", len(raw), maxScheduleEntries)
	}
	out := make(Schedule, 0, len(raw))
	var prev time.Duration
	for i, m := range raw {
		e, err := decodeEntry(m, prev)
		if err != nil {
			return nil, fmt.Errorf("schedule entries[%d]: %w", i, err)
		}
		prev = e.At
		out = append(out, e)
	}
	return out, nil
}

func decodeEntry(m map[string]json.RawMessage, prev time.Duration) (Entry, error) {
	if m == nil {
		return Entry{}, fmt.Errorf("empty entry; want fields %s", strings.Join(entryFields, ", "))
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !slices.Contains(entryFields, k) {
			return Entry{}, fmt.Errorf("unknown field %q (known: %s)", k, strings.Join(entryFields, ", "))
		}
	}
	e := Entry{Node: "*"}
	at, hasAt := m["at"]
	after, hasAfter := m["after"]
	switch {
	case hasAt && hasAfter:
		return Entry{}, fmt.Errorf("fields \"at\" and \"after\": give only one")
	case hasAt:
		d, err := decodeDuration("at", at)
		if err != nil {
			return Entry{}, err
		}
		e.At = d
	case hasAfter:
		d, err := decodeDuration("after", after)
		if err != nil {
			return Entry{}, err
		}
		if d > math.MaxInt64-prev {
			return Entry{}, fmt.Errorf("field \"after\": schedule time overflows")
		}
		e.At = prev + d
	default:
		return Entry{}, fmt.Errorf("field \"at\" or \"after\" is required")
	}
	if v, ok := m["node"]; ok {
		if err := json.Unmarshal(v, &e.Node); err != nil || e.Node == "" {
			return Entry{}, fmt.Errorf("field \"node\": want a node name or \"*\", got %s", v)
		}
	}
	if v, ok := m["gpu"]; ok {
		i, err := strconv.Atoi(string(v))
		if err != nil || i < 0 || i >= len(hgxBusIDs) {
			return Entry{}, fmt.Errorf("field \"gpu\": want a GPU index 0–%d, got %s", len(hgxBusIDs)-1, v)
		}
		e.Fault.GPU = i
	}
	v, ok := m["fault"]
	if !ok {
		return Entry{}, fmt.Errorf("field \"fault\" is required (one of %s)", joinKinds())
	}
	if err := json.Unmarshal(v, &e.Fault.Kind); err != nil {
		return Entry{}, fmt.Errorf("field \"fault\": want a fault kind, got %s", v)
	}
	if _, ok := kindInfo[e.Fault.Kind]; !ok {
		return Entry{}, fmt.Errorf("field \"fault\": unknown fault kind %q (known: %s)", e.Fault.Kind, joinKinds())
	}
	if v, ok := m["params"]; ok {
		p, err := decodeParams(v)
		if err != nil {
			return Entry{}, err
		}
		e.Fault.Params = p
	}
	if err := e.Fault.Validate(); err != nil {
		return Entry{}, err
	}
	return e, nil
}

func decodeDuration(field string, v json.RawMessage) (time.Duration, error) {
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return 0, fmt.Errorf("field %q: want a duration like \"90s\" or \"5m\", got %s", field, v)
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("field %q: want a duration like \"90s\" or \"5m\", got %q", field, s)
	}
	if d < 0 {
		return 0, fmt.Errorf("field %q: negative duration %q", field, s)
	}
	return d, nil
}

// decodeParams turns a map of YAML scalars into strings; numbers keep the
// text they were written with (through JSON, so "5" stays "5").
func decodeParams(v json.RawMessage) (map[string]string, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(v, &raw); err != nil {
		return nil, fmt.Errorf("field \"params\": want a map of names to values, got %s", v)
	}
	out := make(map[string]string, len(raw))
	for _, k := range slices.Sorted(maps.Keys(raw)) {
		if k == "true" || k == "false" {
			// YAML 1.1 reads unquoted y, n, yes, no, on and off as
			// booleans, keys included; no param is named like that.
			return nil, fmt.Errorf("field \"params\": param name %q came from a YAML boolean (y, n, yes, no, on, off); quote the name", k)
		}
		val := bytes.TrimSpace(raw[k])
		switch {
		case len(val) > 0 && val[0] == '"':
			var s string
			if err := json.Unmarshal(val, &s); err != nil {
				return nil, fmt.Errorf("field \"params\": param %q: %w", k, err)
			}
			out[k] = s
		case string(val) == "true" || string(val) == "false":
			out[k] = string(val)
		case len(val) > 0 && (val[0] == '-' || (val[0] >= '0' && val[0] <= '9')):
			out[k] = string(val)
		default:
			return nil, fmt.Errorf("field \"params\": param %q: want a string, number or boolean, got %s", k, val)
		}
	}
	return out, nil
}
