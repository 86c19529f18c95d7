package sim

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/gpuheal/gpuheal/internal/gpu"
)

// paramReader parses a Fault's string params; it keeps the first error so
// parse can read every param in a row and check once.
type paramReader struct {
	f   Fault
	err error
}

func (p *paramReader) fail(name, value, why string) {
	if p.err != nil {
		return
	}
	if value == "" {
		p.err = fmt.Errorf("fault %s: param %q: %s", p.f.Kind, name, why)
		return
	}
	p.err = fmt.Errorf("fault %s: param %q: bad value %q: %s", p.f.Kind, name, value, why)
}

// get returns the raw value; a missing required param is an error.
func (p *paramReader) get(name string, required bool) (string, bool) {
	v, ok := p.f.Params[name]
	if !ok && required {
		p.fail(name, "", "required")
	}
	return v, ok && p.err == nil
}

func (p *paramReader) uint(name string, def, lo, hi uint64, required bool) uint64 {
	v, ok := p.get(name, required)
	if !ok {
		return def
	}
	n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
	switch {
	case err != nil:
		p.fail(name, v, "want a whole number")
	case n < lo || n > hi:
		p.fail(name, v, fmt.Sprintf("want %d–%d", lo, hi))
	}
	return n
}

func (p *paramReader) float(name string, def, lo, hi float64) float64 {
	v, ok := p.get(name, false)
	if !ok {
		return def
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	switch {
	case err != nil || math.IsNaN(f):
		p.fail(name, v, "want a number")
	case f < lo || f > hi:
		p.fail(name, v, fmt.Sprintf("want %g–%g", lo, hi))
	}
	return f
}

func (p *paramReader) bool(name string, def bool) bool {
	v, ok := p.get(name, false)
	if !ok {
		return def
	}
	b, err := strconv.ParseBool(strings.TrimSpace(v))
	if err != nil {
		p.fail(name, v, "want true or false")
	}
	return b
}

// str reads a string param; re, when set, is the form it must have and
// want describes that form in errors.
func (p *paramReader) str(name, def string, re *regexp.Regexp, want string) string {
	v, ok := p.get(name, false)
	if !ok {
		return def
	}
	switch {
	case re != nil && !re.MatchString(v):
		p.fail(name, v, "want "+want)
	case len(v) > 1024:
		p.fail(name, v[:32]+"…", "longer than 1024 bytes")
	}
	return v
}

// action accepts a recovery action by name (node-reboot) or number (2).
func (p *paramReader) action(name string) gpu.RecoveryAction {
	v, ok := p.get(name, true)
	if !ok {
		return gpu.RecoveryNone
	}
	v = strings.ToLower(strings.TrimSpace(v))
	if i := slices.Index(recoveryNames, v); i >= 0 {
		return gpu.RecoveryAction(i)
	}
	if n, err := strconv.ParseUint(v, 0, 8); err == nil && int(n) < len(recoveryNames) {
		return gpu.RecoveryAction(n)
	}
	p.fail(name, v, "want one of "+strings.Join(recoveryNames, ", ")+" or 0–4")
	return gpu.RecoveryNone
}
