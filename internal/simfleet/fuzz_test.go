package simfleet

import (
	"strings"
	"testing"
)

// FuzzDCGMLevel feeds check Jobs' command lines (written by whoever wrote
// the policy) to the level reader: it never panics and always gives a
// level dcgmi takes.
func FuzzDCGMLevel(f *testing.F) {
	for _, seed := range []string{"dcgmi diag -r 3 -j", "dcgmi diag --run=2", "sh\x00-c\x00dcgmi diag -r1", "-r", "-r -r 9", ""} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, cmd string) {
		var p simPod
		p.Spec.Containers = []podContainer{{Name: checkContainer, Command: strings.Split(cmd, "\x00")}}
		if l := dcgmLevel(&p); l < 1 || l > 4 {
			t.Fatalf("%q: level %d", cmd, l)
		}
	})
}

// FuzzParseCheckDurations: a --sim-fleet-check-durations value is either
// refused or gives a positive duration for every kind.
func FuzzParseCheckDurations(f *testing.F) {
	for _, seed := range []string{"DCGM=3m", "NCCL=-1s", "Agent=1m", "NVBandwidth=1e9h"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, pair string) {
		k, v, _ := strings.Cut(pair, "=")
		d, err := ParseCheckDurations(map[string]string{k: v})
		if err != nil {
			return
		}
		for kind, x := range d {
			if x <= 0 {
				t.Fatalf("%q: %s = %v", pair, kind, x)
			}
		}
	})
}
