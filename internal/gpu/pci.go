package gpu

import (
	"fmt"
	"strconv"
	"strings"
)

// NormalizePCIBusID turns the forms drivers and tools print into the one
// form gpuheal uses everywhere: 0000:3b:00.0 (lower-case hex, 4-2-2.1).
// Accepted inputs include NVML's "00000000:3B:00.0", nvidia-smi's
// "00000000:3B:00.0", the kernel log's "0000:3b:00" (no function: .0 is
// assumed) and "3b:00.0" (domain 0 assumed).
func NormalizePCIBusID(s string) (string, error) {
	in := strings.TrimSpace(s)
	if in == "" {
		return "", fmt.Errorf("empty PCI bus id")
	}
	parts := strings.Split(in, ":")
	var domain, bus, devfn string
	switch len(parts) {
	case 3:
		domain, bus, devfn = parts[0], parts[1], parts[2]
	case 2:
		domain, bus, devfn = "0", parts[0], parts[1]
	default:
		return "", fmt.Errorf("PCI bus id %q: want [domain:]bus:device[.function]", s)
	}
	dev, fn, hasFn := strings.Cut(devfn, ".")
	if !hasFn {
		fn = "0"
	}
	d, err := parseHex(domain, 32, "domain", s)
	if err != nil {
		return "", err
	}
	b, err := parseHex(bus, 8, "bus", s)
	if err != nil {
		return "", err
	}
	dv, err := parseHex(dev, 5, "device", s)
	if err != nil {
		return "", err
	}
	f, err := parseHex(fn, 3, "function", s)
	if err != nil {
		return "", err
	}
	if d > 0xffff {
		// NVML prints an 8-digit domain; only the low 16 bits are the
		// PCI segment. Anything above is not a real domain.
		return "", fmt.Errorf("PCI bus id %q: domain %#x out of range", s, d)
	}
	return fmt.Sprintf("%04x:%02x:%02x.%x", d, b, dv, f), nil
}

func parseHex(field string, bits int, what, whole string) (uint64, error) {
	if field == "" {
		return 0, fmt.Errorf("PCI bus id %q: empty %s", whole, what)
	}
	v, err := strconv.ParseUint(field, 16, bits)
	if err != nil {
		return 0, fmt.Errorf("PCI bus id %q: bad %s %q", whole, what, field)
	}
	return v, nil
}
