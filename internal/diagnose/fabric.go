package diagnose

import (
	"fmt"
	"time"

	"github.com/gpuheal/gpuheal/internal/fabric"
	"github.com/gpuheal/gpuheal/internal/finding"
)

// fabricErrorCounters are the port counters whose value on a healthy
// link stays at or near zero; any count is worth a look, as a warning:
// one reading cannot tell an old burst from a rising rate (the agent's
// rules judge the rate).
var fabricErrorCounters = []string{
	"symbol_error", "link_downed", "link_error_recovery", "port_rcv_errors",
	"local_link_integrity_errors", "excessive_buffer_overrun_errors",
}

// FabricFindings reports what one reading of a node's RDMA devices shows
// by itself: fewer devices than expected, ports down, ports slower than
// their peers, and error counts. Without an expected count a port down
// is a warning: one reading cannot tell an unused port from a broken one
// (the agent can, by having seen it up).
func FabricFindings(s *fabric.Snapshot, source string, at time.Time) []finding.Finding {
	var out []finding.Finding
	add := func(dev, code string, sev finding.Severity, act finding.Action, format string, args ...any) {
		out = append(out, finding.Finding{Source: source, Code: code, Device: dev, Severity: sev, Action: act,
			Time: at, Message: fmt.Sprintf(format, args...)})
	}
	if s.ExpectedDevices > 0 && len(s.Devices) < s.ExpectedDevices {
		add("", "FABRIC_DEVICE_MISSING", finding.Fatal, finding.ActionReplace, "%d of %d RDMA devices present", len(s.Devices), s.ExpectedDevices)
	}
	for _, e := range s.Errors {
		add("", "FABRIC_READ_ERROR", finding.Warning, finding.ActionNone, "%s", e)
	}
	best := map[string]float64{}
	for _, d := range s.Devices {
		for _, p := range d.Ports {
			if k := d.Kind + "/" + p.LinkLayer; p.State == "ACTIVE" && p.RateGbps != nil && *p.RateGbps > best[k] {
				best[k] = *p.RateGbps
			}
		}
	}
	for _, d := range s.Devices {
		for _, e := range d.Errors {
			add(d.Name, "FABRIC_READ_ERROR", finding.Warning, finding.ActionNone, "%s: %s", d.Name, e)
		}
		for _, p := range d.Ports {
			name := fmt.Sprintf("%s port %s/%d", d.Kind, d.Name, p.Num)
			switch {
			case p.State != "ACTIVE" && s.ExpectedDevices > 0:
				add(d.Name, "FABRIC_PORT_DOWN", finding.Fatal, finding.ActionReplace, "%s is %s/%s", name, p.State, p.PhysState)
			case p.State != "ACTIVE":
				add(d.Name, "FABRIC_PORT_DOWN", finding.Warning, finding.ActionNone, "%s is %s/%s (unused, or down)", name, p.State, p.PhysState)
			case p.RateGbps != nil && *p.RateGbps < best[d.Kind+"/"+p.LinkLayer]:
				add(d.Name, "FABRIC_PORT_DEGRADED_RATE", finding.Fatal, finding.ActionReplace, "%s runs at %g Gb/s, its peers at %g",
					name, *p.RateGbps, best[d.Kind+"/"+p.LinkLayer])
			}
			for _, c := range fabricErrorCounters {
				if v := p.Counters[c]; v > 0 {
					add(d.Name, "FABRIC_PORT_ERRORS", finding.Warning, finding.ActionNone, "%s: %s %d", name, c, v)
				}
			}
		}
	}
	return out
}
