package sim

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Fabric faults are the node's, not a GPU's: a cable, a transceiver, a
// switch port or the NIC. None is fixed by a reboot (Reset): the driver
// resets the adapters, so their counters start over, and the bad cable is
// still bad. A port stays down, a flapping link flaps its times again from
// the boot, errors go on rising and a missing device stays missing. Only a
// new node (a replacement: a new Node) comes without them; Clear is the
// repair that fixes the part.

// fabricKinds are the fault kinds of the RDMA fabric.
var fabricKinds = []Kind{
	KindFabricPortDown, KindFabricLinkFlap, KindFabricSymbolErrors,
	KindFabricDegradedRate, KindFabricDeviceMissing, KindEFAErrors,
}

// IsFabricKind says whether k is a fault of the RDMA fabric, whose
// `device` param picks the device.
func IsFabricKind(k Kind) bool { return slices.Contains(fabricKinds, k) }

// OutlivesReboot says whether a fault of kind k stays through a reboot
// (Reset): a latent fault (the board's) or a fabric fault (a cable, a
// switch port, a NIC). Only a replacement, a new node, comes without it.
func OutlivesReboot(k Kind) bool { return k == KindLatent || IsFabricKind(k) }

// fabricSpec is a fabric fault's parsed params.
type fabricSpec struct {
	device  int
	rate    float64 // Gb/s (degraded rate), or per second (errors)
	every   time.Duration
	times   uint64
	counter string
}

func (p *paramReader) fabricFault() fabricSpec {
	s := fabricSpec{device: int(p.uint("device", 0, 0, uint64(len(efaBuses)-1), false))}
	switch p.f.Kind {
	case KindFabricLinkFlap:
		s.every = time.Minute
		if v, ok := p.get("every", false); ok {
			if s.every = p.duration("every"); p.err == nil && s.every < time.Second {
				p.fail("every", v, "want at least 1s")
			}
		}
		s.times = p.uint("times", 5, 1, 1000, false)
	case KindFabricSymbolErrors:
		s.rate = p.float("rate", 5, 0.001, 1e6)
	case KindFabricDegradedRate:
		s.rate = p.float("rate", 200, 1, 800)
	case KindEFAErrors:
		s.rate = p.float("rate", 1, 0.001, 1e6)
		s.counter = p.str("counter", efaErrorCounters[0], nil, "")
		if p.err == nil && !slices.Contains(efaErrorCounters, s.counter) {
			p.fail("counter", s.counter, "want one of "+strings.Join(efaErrorCounters, ", "))
		}
	}
	return s
}

// checkFabric holds the rules that depend on the node's fabric, fixed by
// New. EFA's driver hard-codes the port's state and rate and has no port
// counters, so only a missing device and its own error counters exist
// there.
func (n *Node) checkFabric(s spec) error {
	f := n.fab
	if f == nil {
		return fmt.Errorf("fault %s: node %s has no RDMA fabric", s.Kind, n.opts.NodeName)
	}
	if s.fab.device >= len(f.devs) {
		return fmt.Errorf("fault %s: param \"device\": node %s has RDMA devices 0–%d", s.Kind, n.opts.NodeName, len(f.devs)-1)
	}
	switch {
	case s.Kind == KindEFAErrors && !f.efa:
		return fmt.Errorf("fault %s: node %s has InfiniBand devices, not EFA", s.Kind, n.opts.NodeName)
	case f.efa && s.Kind != KindEFAErrors && s.Kind != KindFabricDeviceMissing:
		return fmt.Errorf("fault %s: EFA devices report a fixed port state and rate and no port counters (use efa-errors or fabric-device-missing)", s.Kind)
	case s.Kind == KindFabricDegradedRate && s.fab.rate >= f.devs[s.fab.device].rate:
		return fmt.Errorf("fault %s: param \"rate\": %g Gb/s is not below the port's %g", s.Kind, s.fab.rate, f.devs[s.fab.device].rate)
	}
	return nil
}

// apply changes the device for an already checked fault and returns its
// kernel-log lines. Only a port going down logs: the ConnectX's module
// event, as MLNX_OFED's mlx5_core prints it (the inbox driver leaves out
// the "function:line:(pid N): " part; the detector reads both). The real
// driver prints nothing of its own for a flap, symbol errors, a slower
// link or EFA's error counters: they show only in the counters.
func (f *fabricState) apply(s spec, now time.Time) []line {
	d := f.devs[s.fab.device]
	switch s.Kind {
	case KindFabricPortDown:
		if d.down {
			return nil // no link, no new event
		}
		d.down, d.downAt = true, now
		d.extra["link_downed"]++
		return []line{info(fmt.Sprintf("mlx5_core %s: mlx5_port_module_event:1131:(pid 0): Port module event: module 0, Cable unplugged", d.bus))}
	case KindFabricLinkFlap:
		// The port is down for well under a poll interval each time; only
		// link_downed shows the flap.
		d.rise(&riser{kind: s.Kind, counter: "link_downed", since: now, every: s.fab.every, times: s.fab.times}, now)
	case KindFabricSymbolErrors:
		d.rise(&riser{kind: s.Kind, counter: "symbol_error", since: now, rate: s.fab.rate}, now)
	case KindEFAErrors:
		d.rise(&riser{kind: s.Kind, counter: s.fab.counter, since: now, rate: s.fab.rate}, now)
	case KindFabricDegradedRate:
		d.degraded = s.fab.rate
	case KindFabricDeviceMissing:
		d.missing = true
	}
	return nil
}

// rise starts r; one of the same kind on the same counter stops first,
// keeping what it counted.
func (d *rdmaDevice) rise(r *riser, now time.Time) {
	d.stop(r.kind, r.counter, now)
	d.risers = append(d.risers, r)
}

// stop ends the risers of kind (on counter, or every one when ""); what
// they counted stays in extra.
func (d *rdmaDevice) stop(kind Kind, counter string, now time.Time) {
	d.risers = slices.DeleteFunc(d.risers, func(r *riser) bool {
		if r.kind != kind || (counter != "" && r.counter != counter) {
			return false
		}
		d.extra[r.counter] += r.count(now)
		return true
	})
}

// clearKind repairs kind on every device: the port comes up, the rate is
// back, the device is back, counters stop rising and keep their counts.
func (f *fabricState) clearKind(kind Kind, now time.Time) {
	for _, d := range f.devs {
		switch kind {
		case KindFabricPortDown:
			if d.down {
				d.idle += now.Sub(d.downAt)
				d.down = false
			}
		case KindFabricDegradedRate:
			d.degraded = 0
		case KindFabricDeviceMissing:
			d.missing = false
		default:
			d.stop(kind, "", now)
		}
	}
}

// reboot starts a new boot of the adapters at now: counters start over,
// every fault stays, and rising ones count again from now.
func (f *fabricState) reboot(now time.Time) {
	f.epoch = now
	for _, d := range f.devs {
		clear(d.extra)
		d.idle = 0
		if d.down {
			d.downAt = now
		}
		for _, r := range d.risers {
			r.since = now
		}
	}
}
