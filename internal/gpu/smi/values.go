package smi

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/gpuheal/gpuheal/internal/gpu"
)

// kind says what an nvidia-smi value string holds.
type kind int

const (
	// absent: the element is missing or empty. Older schemas lack many
	// elements, so absence is normal and never an error.
	absent kind = iota
	// unsupported: nvidia-smi said the reading does not exist on this GPU
	// or driver. The value is nil and nothing went wrong.
	unsupported
	// failed: nvidia-smi printed an NVML error string instead of a value.
	// On a sick GPU this is itself a symptom, so it is recorded.
	failed
	// present: anything else; the caller parses it.
	present
)

// unsupportedForms are printed where NVML returns NOT_SUPPORTED or the
// field does not apply (no ECC on GeForce, remapping before Ampere).
var unsupportedForms = map[string]bool{
	"n/a":           true,
	"not supported": true,
	"not available": true,
	"requested functionality has been deprecated": true,
}

// failedForms are nvmlErrorString texts that nvidia-smi prints in place of
// a value when the query itself failed.
var failedForms = map[string]bool{
	"unknown error":                   true,
	"gpu is lost":                     true,
	"gpu requires reset":              true,
	"insufficient permissions":        true,
	"no permission":                   true,
	"timeout":                         true,
	"driver not loaded":               true,
	"function not found":              true,
	"corrupted inforom":               true,
	"memory allocation failed":        true,
	"insufficient resources":          true,
	"in use by another client":        true,
	"driver/library version mismatch": true,
	"uninitialized":                   true,
	"invalid argument":                true,
	"not found":                       true,
	"insufficient size":               true,
	"insufficient external power":     true,
	"irq issue":                       true,
	"interrupt request issue":         true,
	"nvml shared library not found":   true,
}

// classify trims raw, strips the brackets the text output wraps some forms
// in ("[N/A]", "[Unknown Error]") and says what the value is.
func classify(raw string) (string, kind) {
	s := strings.TrimSpace(raw)
	if s == "" {
		return "", absent
	}
	if len(s) > 2 && s[0] == '[' && s[len(s)-1] == ']' {
		s = strings.TrimSpace(s[1 : len(s)-1])
	}
	l := strings.ToLower(s)
	switch {
	case unsupportedForms[l]:
		return s, unsupported
	case failedForms[l]:
		return s, failed
	}
	return s, present
}

// recorder turns raw values into typed ones for one GPU (or the node) and
// keeps a QueryError for every value that could not be read, so that one
// bad field costs that field and nothing else.
type recorder struct {
	where string // "gpu 0 (0000:01:00.0)" or "node"
	errs  *[]gpu.QueryError
}

func (r recorder) add(query string, timeout bool, format string, args ...any) {
	*r.errs = append(*r.errs, gpu.QueryError{
		Query:   query,
		Message: r.where + ": " + query + ": " + fmt.Sprintf(format, args...),
		Timeout: timeout,
	})
}

// value classifies raw and records a failure; ok is true only when there
// is something to parse.
func (r recorder) value(query, raw string) (string, bool) {
	s, k := classify(raw)
	switch k {
	case failed:
		r.add(query, strings.EqualFold(s, "timeout"), "nvidia-smi reported %q", s)
		return "", false
	case present:
		return s, true
	}
	return "", false
}

// number strips unit (printed after an optional space: "27 C", "16x") and
// parses the rest. A bare number is accepted: the unit is implied.
func number(s, unit string) (float64, error) {
	num := s
	if unit != "" {
		num = strings.TrimSpace(strings.TrimSuffix(s, unit))
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("cannot parse %q as a number%s", s, unitNote(unit))
	}
	return v, nil
}

func unitNote(unit string) string {
	if unit == "" {
		return ""
	}
	return fmt.Sprintf(" (unit %q)", unit)
}

func (r recorder) f64(query, raw, unit string) *float64 {
	s, ok := r.value(query, raw)
	if !ok {
		return nil
	}
	v, err := number(s, unit)
	if err != nil {
		r.add(query, false, "%v", err)
		return nil
	}
	return gpu.F64(v)
}

func (r recorder) u64(query, raw, unit string) *uint64 {
	s, ok := r.value(query, raw)
	if !ok {
		return nil
	}
	num := s
	if unit != "" {
		num = strings.TrimSpace(strings.TrimSuffix(s, unit))
	}
	v, err := strconv.ParseUint(num, 10, 64)
	if err != nil {
		r.add(query, false, "cannot parse %q as a whole number%s", s, unitNote(unit))
		return nil
	}
	return gpu.U64(v)
}

// byteUnits are the units nvidia-smi may print memory sizes in; it prints
// MiB today, and a bare number means MiB too.
var byteUnits = []struct {
	suffix string
	mult   uint64
}{
	{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1},
}

func (r recorder) bytes(query, raw string) *uint64 {
	s, ok := r.value(query, raw)
	if !ok {
		return nil
	}
	num, mult := s, uint64(1<<20)
	for _, u := range byteUnits {
		if rest, found := strings.CutSuffix(s, u.suffix); found {
			num, mult = strings.TrimSpace(rest), u.mult
			break
		}
	}
	v, err := strconv.ParseUint(num, 10, 64)
	if err != nil {
		r.add(query, false, "cannot parse %q as a memory size", s)
		return nil
	}
	if v > math.MaxUint64/mult {
		r.add(query, false, "memory size %q overflows 64 bits of bytes", s)
		return nil
	}
	return gpu.U64(v * mult)
}

// flag reads the yes/no forms nvidia-smi uses; which pair appears depends
// on the element, and accepting all of them everywhere costs nothing.
func (r recorder) flag(query, raw string) *bool {
	s, ok := r.value(query, raw)
	if !ok {
		return nil
	}
	switch strings.ToLower(s) {
	case "enabled", "yes", "active", "true", "on":
		return gpu.Bool(true)
	case "disabled", "no", "not active", "false", "off":
		return gpu.Bool(false)
	}
	r.add(query, false, "cannot parse %q as Enabled/Disabled, Yes/No or Active/Not Active", s)
	return nil
}

// text returns a free-form string, "" when unsupported or failed.
func (r recorder) text(query, raw string) string {
	s, _ := r.value(query, raw)
	return s
}

// sum adds the readings that are present and returns nil when none is, so
// a memory type without counters does not turn "unknown" into 0.
func (r recorder) sum(query string, parts ...*uint64) *uint64 {
	var total *uint64
	for _, p := range parts {
		if p == nil {
			continue
		}
		if total == nil {
			total = gpu.U64(0)
		}
		if *total > math.MaxUint64-*p {
			r.add(query, false, "sum of counters overflows 64 bits")
			return nil
		}
		*total += *p
	}
	return total
}
