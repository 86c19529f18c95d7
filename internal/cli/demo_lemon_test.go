package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gpuheal/gpuheal/internal/fleetview"
)

// The lemon line reads the controller's note: the machine, the count and
// window, each incident at its time from the demo's start, the outcome.
func TestDescribeLemonRetired(t *testing.T) {
	start := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	note := "lemon: machine aws:///us-east-1a/i-0abc had 2 hardware incidents within 720h0m0s (the rule: 2): " +
		"gpu-node-0007-1a2b on gpu-node-0007 at 2026-12-04T10:00:12Z (reboot), gpu-node-0007-3c4d on gpu-node-0007 at 2026-12-04T10:00:51Z (reboot); " +
		"replacing instead of a Reboot"
	got := describeLemonRetired(note, start, "replaced by gpu-node-0007-r5e6f70")
	want := "LEMON RETIRED (machine aws:///us-east-1a/i-0abc): 2 hardware incidents in 720h, the rule's limit 2: " +
		"gpu-node-0007-1a2b at +12s (reboot), gpu-node-0007-3c4d at +51s (reboot); replaced by gpu-node-0007-r5e6f70"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if got := describeLemonRetired("lemon: something else", start, "replaced by x"); got != "LEMON RETIRED: something else; replaced by x" {
		t.Errorf("an unknown note: got %q", got)
	}
}

// The planter plants only while the node is in service, stops after the
// rule's count, retries when the fleet says not now, and gives up past
// its deadline.
func TestLemonPlanterWaitsForTheNodeToComeBack(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	calls, busy := 0, false
	p := &lemonPlanter{node: "n7", wait: time.Minute, deadline: t0.Add(time.Minute), inject: func(context.Context) error {
		if busy {
			return errNotNow{"booting"}
		}
		calls++
		return nil
	}}
	var others []fleetview.Row
	for _, name := range []string{"n0", "n1", "n2", "n3"} {
		others = append(others, fleetview.Row{Name: name, State: fleetview.StateHealthy})
	}
	up := append([]fleetview.Row{{Name: "n7", State: fleetview.StateHealthy}}, others...)
	inRepair := append([]fleetview.Row{{Name: "n7", State: fleetview.StateRemediating, Incident: "n7-a"}}, others...)
	// Another node out of service: one more would open the breaker (20%
	// of 5 nodes is one).
	busyFleet := append([]fleetview.Row{{Name: "n7", State: fleetview.StateHealthy}, {Name: "n0", State: fleetview.StateUnhealthy}}, others[1:]...)
	ctx := context.Background()
	if what := p.step(ctx, t0, busyFleet); what != "" || calls != 0 {
		t.Fatalf("with no room under the breaker: %q, %d calls", what, calls)
	}
	if what := p.step(ctx, t0, up); !strings.Contains(what, "incident 1 of 2") || calls != 1 {
		t.Fatalf("first step: %q, %d calls", what, calls)
	}
	if what := p.step(ctx, t0.Add(time.Second), inRepair); what != "" || calls != 1 {
		t.Fatalf("in repair: %q, %d calls", what, calls)
	}
	busy = true
	if what := p.step(ctx, t0.Add(2*time.Second), up); what != "" || calls != 1 {
		t.Fatalf("agent booting: %q, %d calls", what, calls)
	}
	busy = false
	if what := p.step(ctx, t0.Add(3*time.Second), up); !strings.Contains(what, "incident 2 of 2") || calls != 2 || !p.done {
		t.Fatalf("second: %q, %d calls, done %v", what, calls, p.done)
	}
	if what := p.step(ctx, t0.Add(4*time.Second), up); what != "" || calls != 2 {
		t.Fatalf("after the rule's count: %q, %d calls", what, calls)
	}

	late := &lemonPlanter{node: "n7", wait: time.Minute, deadline: t0.Add(time.Minute), inject: func(context.Context) error { return nil }}
	if what := late.step(ctx, t0.Add(2*time.Minute), inRepair); !strings.Contains(what, "not back in service") || !late.done {
		t.Fatalf("past the deadline: %q, done %v", what, late.done)
	}
}
