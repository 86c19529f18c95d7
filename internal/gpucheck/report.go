// Package gpucheck judges one reading of a node's GPUs (gpu.NodeSnapshot)
// by the agent's checks of the health gate (v1alpha1.AgentCheckNames): the
// report the agent publishes on its Node for the controller to gate a
// repaired or new node on. It is pure: what the agent already reads goes
// in, one verdict per check comes out.
//
// A reading the driver does not expose (a nil field) passes with "not
// exposed": the gate is for faults the agent can see, and an older driver
// must not hold every node out of service. The exception is GPUsPresent,
// which never passes with no GPU found.
package gpucheck

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/gpu"
	"github.com/gpuheal/gpuheal/internal/termsafe"
)

// maxText bounds a check's value, expected and message: the report is an
// annotation, and a node with every NVLink down must not write kilobytes.
const maxText = 300

// judges are the checks, keyed by name; Judge runs them in the order of
// v1alpha1.AgentCheckNames.
var judges = map[string]func(*gpu.NodeSnapshot) v1alpha1.AgentCheck{
	v1alpha1.AgentCheckGPUsPresent:         gpusPresent,
	v1alpha1.AgentCheckNoVolatileECC:       noVolatileECC,
	v1alpha1.AgentCheckNoRowRemapPending:   noRowRemapPending,
	v1alpha1.AgentCheckNVLinksUp:           nvlinksUp,
	v1alpha1.AgentCheckFabricHealthy:       fabricHealthy,
	v1alpha1.AgentCheckPCIeLinkAtMax:       pcieLinkAtMax,
	v1alpha1.AgentCheckNoRecoveryPending:   noRecoveryPending,
	v1alpha1.AgentCheckDriverVersionsMatch: driverVersionsMatch,
}

// Judge returns one check per name of v1alpha1.AgentCheckNames, in that
// order. A nil snapshot (the GPUs could not be read) fails every check.
func Judge(s *gpu.NodeSnapshot) []v1alpha1.AgentCheck {
	out := make([]v1alpha1.AgentCheck, 0, len(v1alpha1.AgentCheckNames))
	for _, name := range v1alpha1.AgentCheckNames {
		var c v1alpha1.AgentCheck
		if s == nil {
			c = v1alpha1.AgentCheck{Passed: false, Message: "the GPUs could not be read"}
		} else {
			c = judges[name](s)
		}
		c.Name = name
		// Names, versions and states come from the driver: whoever shows
		// the report on a terminal must not get control sequences.
		c.Value, c.Expected, c.Message = clip(c.Value), clip(c.Expected), clip(c.Message)
		out = append(out, c)
	}
	return out
}

// Report is the agent's report for s: its checks, the snapshot's time
// (now when s is nil or carries none) and the host's boot ID ("" unknown).
func Report(s *gpu.NodeSnapshot, bootID string, now time.Time) v1alpha1.AgentChecks {
	at := now
	if s != nil && !s.Time.IsZero() {
		at = s.Time
	}
	return v1alpha1.AgentChecks{Time: metav1.NewTime(at), BootID: bootID, Checks: Judge(s)}
}

// Equal says two reports judge the same: the same boot and the same
// checks, whatever their times.
func Equal(a, b v1alpha1.AgentChecks) bool {
	if a.BootID != b.BootID || len(a.Checks) != len(b.Checks) {
		return false
	}
	for i := range a.Checks {
		if a.Checks[i] != b.Checks[i] {
			return false
		}
	}
	return true
}

func clip(s string) string {
	s = termsafe.Clean(s)
	if len(s) <= maxText {
		return s
	}
	// Cut on a rune boundary: the annotation is JSON, read as UTF-8.
	cut := maxText - len("…")
	for cut > 0 && s[cut]&0xc0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}
