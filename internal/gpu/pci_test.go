package gpu

import (
	"strings"
	"testing"
)

func TestNormalizePCIBusID(t *testing.T) {
	for in, want := range map[string]string{
		"00000000:3B:00.0": "0000:3b:00.0", // NVML and nvidia-smi
		"0000:3b:00":       "0000:3b:00.0", // kernel log Xid lines carry no function
		"0009:01:00":       "0009:01:00.0", // non-zero domain (GB200)
		"3b:00.0":          "0000:3b:00.0",
		" 0000:DB:00.0 ":   "0000:db:00.0",
		"0000:10:1c":       "0000:10:1c.0",
		"00000001:ab:1f.7": "0001:ab:1f.7",
	} {
		got, err := NormalizePCIBusID(in)
		if err != nil || got != want {
			t.Errorf("NormalizePCIBusID(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestNormalizePCIBusIDRejects(t *testing.T) {
	for in, want := range map[string]string{
		"":                 "empty",
		"3b":               "want [domain:]bus:device[.function]",
		"0000:3g:00.0":     `bad bus "3g"`,
		"0000:3b:20.0":     `bad device "20"`,
		"0000:3b:00.8":     `bad function "8"`,
		"10000000:3b:00.0": "domain 0x10000000 out of range",
		"a:b:c:d":          "want [domain:]bus:device[.function]",
		"0000::00.0":       "empty bus",
	} {
		_, err := NormalizePCIBusID(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("NormalizePCIBusID(%q) error = %v, want it to contain %q", in, err, want)
		}
	}
}

func FuzzNormalizePCIBusID(f *testing.F) {
	for _, s := range []string{"00000000:3B:00.0", "0000:3b:00", "0009:01:00", "3b:00.0", "x", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := NormalizePCIBusID(s)
		if err != nil {
			return
		}
		// A normalized id is a fixed point and has the canonical shape.
		again, err := NormalizePCIBusID(got)
		if err != nil || again != got || len(got) != len("0000:3b:00.0") {
			t.Fatalf("NormalizePCIBusID(%q) = %q, renormalized %q, %v", s, got, again, err)
		}
	})
}
