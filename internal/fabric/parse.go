package fabric

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
)

// The parsers below read what the kernel's drivers/infiniband/core/sysfs.c
// writes: state "%d: %s" ("4: ACTIVE"), phys_state "%u: %s" ("5: LinkUp",
// "7: Phy Test"), rate "%d%s Gb/sec (%dX%s)" ("400 Gb/sec (4X NDR)",
// "2.5 Gb/sec (1X SDR)"), counters "%u" or "%llu". Each takes the file's
// whole content, trailing newline included, and rejects anything else.

// maxText bounds a text attribute: the longest the kernel writes here is
// a 64-byte board id.
const maxText = 128

// printable trims b and returns it if it is a short line of printable
// ASCII.
func printable(b []byte) (string, error) {
	b = bytes.TrimSpace(b)
	if len(b) > maxText {
		return "", errors.New("longer than " + strconv.Itoa(maxText) + " bytes")
	}
	for _, c := range b {
		if c < 0x20 || c > 0x7e {
			return "", errors.New("not printable ASCII: " + strconv.Quote(clip(string(b))))
		}
	}
	return string(b), nil
}

// parseState returns the name in a state or phys_state line: "4: ACTIVE"
// is ACTIVE, "7: Phy Test" is "Phy Test".
func parseState(s string) (string, error) {
	num, name, ok := strings.Cut(strings.TrimSpace(s), ": ")
	name = strings.TrimSpace(name)
	if !ok || !digits(num) || len(num) > 3 || name == "" {
		return "", errors.New("not a state (\"4: ACTIVE\"): " + strconv.Quote(clip(s)))
	}
	return name, nil
}

// parseRate returns the Gb/s of a rate line: "400 Gb/sec (4X NDR)" is
// 400, "2.5 Gb/sec (1X SDR)" 2.5; the width and speed in parentheses are
// optional.
func parseRate(s string) (float64, error) {
	// The error is built only when it is returned: a rate is parsed at
	// every read whose rate changed.
	bad := func() error { return errors.New("not a rate (\"400 Gb/sec (4X NDR)\"): " + strconv.Quote(clip(s))) }
	num, rest, _ := strings.Cut(strings.TrimSpace(s), " ")
	if rest != "Gb/sec" && !strings.HasPrefix(rest, "Gb/sec (") {
		return 0, bad()
	}
	// Digits with at most one point: ParseFloat alone would also take
	// "NaN", "Inf", "1e9" and "0x1p3".
	whole, frac, _ := strings.Cut(num, ".")
	if !digits(whole) || (frac != "" && !digits(frac)) || strings.HasSuffix(num, ".") || len(num) > 12 {
		return 0, bad()
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, bad()
	}
	return v, nil
}

// parseCounter parses one counter file: decimal digits and a newline.
// "N/A (no PMA)", what a device without performance management writes,
// is errNotAvailable. It takes bytes so that reading a counter allocates
// no string.
func parseCounter(b []byte) (uint64, error) {
	b = bytes.TrimRight(b, "\n")
	if bytes.HasPrefix(b, []byte("N/A")) {
		return 0, errNotAvailable
	}
	if len(b) == 0 || len(b) > 20 {
		return 0, errors.New("not a counter: " + strconv.Quote(clip(string(b))))
	}
	var v uint64
	for _, c := range b {
		d := uint64(c - '0')
		if c < '0' || c > '9' || v > (1<<64-1-d)/10 {
			return 0, errors.New("not a counter (64-bit decimal): " + strconv.Quote(clip(string(b))))
		}
		v = v*10 + d
	}
	return v, nil
}

func digits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// pciAddress returns name lower-cased if it is a PCI address
// (domain:bus:device.function, "0000:3b:00.0"), else "": a software
// device's link points at something else.
func pciAddress(name string) string {
	name = strings.ToLower(name)
	dom, rest, ok1 := strings.Cut(name, ":")
	bus, rest, ok2 := strings.Cut(rest, ":")
	dev, fn, ok3 := strings.Cut(rest, ".")
	if !ok1 || !ok2 || !ok3 || len(dom) < 4 || len(dom) > 8 || len(bus) != 2 || len(dev) != 2 ||
		len(fn) != 1 || !hex(dom+bus+dev) || fn[0] < '0' || fn[0] > '7' {
		return ""
	}
	return name
}

func hex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// kindOf decides the fabric: the efa driver is EFA whatever its ports
// say (its link layer reads Unknown); an Ethernet link layer is RoCE; the
// rest is InfiniBand.
func kindOf(d *Device) string {
	if d.Driver == "efa" {
		return KindEFA
	}
	for _, p := range d.Ports {
		if p.LinkLayer == "Ethernet" {
			return KindRoCE
		}
	}
	return KindInfiniBand
}
