package fabric

import (
	"bytes"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
)

// Seeds are what the kernel writes (drivers/infiniband/core/sysfs.c, and
// the captures in testdata) plus the near misses.
var (
	stateSeeds = []string{"4: ACTIVE\n", "1: DOWN", "5: LinkUp\n", "7: Phy Test\n", "3: Disabled",
		"0: <unknown>\n", "6: UNKNOWN", "ACTIVE", "4:ACTIVE", ": ACTIVE", "4: ", "-1: DOWN", "4: ACTIVE: x"}
	rateSeeds = []string{"400 Gb/sec (4X NDR)\n", "2.5 Gb/sec (1X SDR)\n", "100 Gb/sec (4X EDR)", "100 Gb/sec",
		"200 Gb/sec (2X NDR)", "1600 Gb/sec (8X XDR)", "NaN Gb/sec", "Inf Gb/sec", "1e3 Gb/sec", "0x1p3 Gb/sec",
		"2. Gb/sec", ".5 Gb/sec", "400 Gb/s", "400Gb/sec", "-1 Gb/sec", ""}
	counterSeeds = []string{"0\n", "230442669431839", "18446744073709551615\n", "18446744073709551616",
		"N/A (no PMA)\n", "-1", "1 2", "", "\n", "0x10", "007", "99999999999999999999999"}
)

func TestParseState(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"4: ACTIVE\n": "ACTIVE", "5: LinkUp\n": "LinkUp", "7: Phy Test\n": "Phy Test", "0: <unknown>": "<unknown>",
		"ACTIVE": "", "4:ACTIVE": "", ": ACTIVE": "", "4: ": "", "-1: DOWN": "", "1234: DOWN": "",
	} {
		got, err := parseState(in)
		if got != want || (err == nil) != (want != "") {
			t.Errorf("parseState(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestParseRate(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]float64{
		"400 Gb/sec (4X NDR)\n": 400, "2.5 Gb/sec (1X SDR)\n": 2.5, "100 Gb/sec": 100, "200 Gb/sec (2X NDR)": 200,
		"NaN Gb/sec": -1, "Inf Gb/sec": -1, "1e3 Gb/sec": -1, "2. Gb/sec": -1, ".5 Gb/sec": -1,
		"400 Gb/s": -1, "400Gb/sec": -1, "-1 Gb/sec": -1, "": -1, "400 Gb/secs": -1,
	} {
		got, err := parseRate(in)
		if (err != nil) != (want < 0) || (err == nil && got != want) {
			t.Errorf("parseRate(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
}

func TestParseCounter(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]uint64{
		"0\n": 0, "230442669431839": 230442669431839, "18446744073709551615\n": math.MaxUint64, "007": 7,
	} {
		if got, err := parseCounter([]byte(in)); err != nil || got != want {
			t.Errorf("parseCounter(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"18446744073709551616", "-1", "1 2", "", "\n", "0x10", "1\n\n2"} {
		if got, err := parseCounter([]byte(in)); err == nil {
			t.Errorf("parseCounter(%q) = %d, want an error", in, got)
		}
	}
	if _, err := parseCounter([]byte("N/A (no PMA)\n")); !errors.Is(err, errNotAvailable) {
		t.Errorf("parseCounter(N/A) error %v, want errNotAvailable", err)
	}
}

// parseState never panics, and a name it returns is a trimmed, non-empty
// part of its input.
func FuzzParseState(f *testing.F) {
	for _, s := range stateSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		name, err := parseState(in)
		if err != nil {
			return
		}
		if name == "" || name != strings.TrimSpace(name) || !strings.Contains(in, name) {
			t.Errorf("parseState(%q) = %q", in, name)
		}
	})
}

// parseRate accepts only a finite, non-negative decimal followed by Gb/sec.
func FuzzParseRate(f *testing.F) {
	for _, s := range rateSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		v, err := parseRate(in)
		if err != nil {
			return
		}
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) || !strings.Contains(in, "Gb/sec") {
			t.Errorf("parseRate(%q) = %v", in, v)
		}
	})
}

// parseCounter agrees with strconv on every input of digits, and takes
// nothing else but N/A.
func FuzzParseCounter(f *testing.F) {
	for _, s := range counterSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		v, err := parseCounter(in)
		trimmed := string(bytes.TrimRight(in, "\n"))
		want, werr := strconv.ParseUint(trimmed, 10, 64)
		plain := werr == nil && len(trimmed) <= 20 // the kernel pads no zeros
		switch {
		case errors.Is(err, errNotAvailable):
			if !strings.HasPrefix(trimmed, "N/A") {
				t.Errorf("parseCounter(%q): N/A for what does not say N/A", in)
			}
		case err == nil && (!plain || v != want):
			t.Errorf("parseCounter(%q) = %d; strconv says %d, %v", in, v, want, werr)
		case err != nil && plain:
			t.Errorf("parseCounter(%q) failed (%v); strconv reads %d", in, err, want)
		}
	})
}

// printable is what becomes a label value: bounded, printable ASCII.
func FuzzPrintable(f *testing.F) {
	for _, s := range []string{"MT_0000000838\n", "28.41.1000", "b859:9f03:00d4:1b2c\n", "InfiniBand", "\xff", ""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		s, err := printable(in)
		if err != nil {
			return
		}
		if len(s) > maxText || s != strings.TrimSpace(s) {
			t.Errorf("printable(%q) = %q", in, s)
		}
		for _, c := range []byte(s) {
			if c < 0x20 || c > 0x7e {
				t.Errorf("printable(%q) = %q", in, s)
			}
		}
	})
}
