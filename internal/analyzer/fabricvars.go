package analyzer

import (
	"strconv"
	"time"

	"github.com/gpuheal/gpuheal/internal/fabric"
)

// PortRef names the RDMA port a problem is about.
type PortRef struct {
	Device   string
	Port     int
	Kind     string
	PCIBusID string
}

// String is the port as rules and operators write it: mlx5_0/1.
func (p *PortRef) String() string { return p.Device + "/" + strconv.Itoa(p.Port) }

// portKey identifies a port across snapshots and in problem keys; the
// prefix keeps it apart from GPU keys (PCI addresses).
func portKey(d *fabric.Device, p *fabric.Port) string {
	return "fabric:" + d.Name + "/" + strconv.Itoa(p.Num)
}

// portMemory is what the engine remembers of a port between snapshots:
// the counters for deltas, and what the port has shown since the agent
// started, which says what it is expected to do.
type portMemory struct {
	at         time.Time
	counters   map[string]uint64
	hwCounters map[string]uint64
	// seenActive: the port was ACTIVE in some snapshot, so it is cabled
	// and in use; going down later is a fault, not an unused port.
	seenActive bool
	// maxRate is the highest rate it ran at while ACTIVE.
	maxRate float64
}

// portInput is one port's variables for one evaluation.
type portInput struct {
	ref            PortRef
	key            string
	device, port   map[string]any
	delta, hwDelta map[string]any
	seconds        float64
}

// preparePorts builds the port scope's variables and the node's fabric
// summary, and advances the engine's port memory.
func (e *Engine) preparePorts(f *fabric.Snapshot, at time.Time) (ports []portInput, summary map[string]any) {
	summary = map[string]any{"available": f != nil, "expectedDevices": int64(0), "foundDevices": int64(0),
		"activePorts": int64(0), "ports": int64(0), "errors": []any{}}
	if f == nil {
		// No reading is not a healthy reading: the memory stays, as it
		// does for a GPU that did not answer.
		return nil, summary
	}
	summary["expectedDevices"] = int64(f.ExpectedDevices)
	summary["foundDevices"] = int64(len(f.Devices))
	summary["errors"] = stringList(f.Errors)
	// The rate a port should run at: the best of its peers of the same
	// kind and link layer (a node's eight HCAs are one model), or its own
	// best since start.
	peerRate := map[string]float64{}
	for i := range f.Devices {
		d := &f.Devices[i]
		for j := range d.Ports {
			p := &d.Ports[j]
			if p.State == "ACTIVE" && p.RateGbps != nil && *p.RateGbps > peerRate[d.Kind+"/"+p.LinkLayer] {
				peerRate[d.Kind+"/"+p.LinkLayer] = *p.RateGbps
			}
		}
	}
	next := make(map[string]portMemory, len(e.ports))
	var active int64
	for i := range f.Devices {
		d := &f.Devices[i]
		dev := deviceVars(d)
		for j := range d.Ports {
			p := &d.Ports[j]
			k := portKey(d, p)
			prev, had := e.ports[k]
			mem := portMemory{at: at, counters: p.Counters, hwCounters: p.HWCounters,
				seenActive: prev.seenActive, maxRate: prev.maxRate}
			if p.State == "ACTIVE" {
				active++
				mem.seenActive = true
				if p.RateGbps != nil && *p.RateGbps > mem.maxRate {
					mem.maxRate = *p.RateGbps
				}
			}
			expected := max(peerRate[d.Kind+"/"+p.LinkLayer], mem.maxRate)
			pv := portVars(p, mem.seenActive, expected)
			in := portInput{ref: PortRef{Device: d.Name, Port: p.Num, Kind: d.Kind, PCIBusID: d.PCIBusID},
				key: k, device: dev, port: pv, delta: map[string]any{}, hwDelta: map[string]any{}}
			if had && at.After(prev.at) {
				in.delta = counterDeltas(p.Counters, prev.counters)
				in.hwDelta = counterDeltas(p.HWCounters, prev.hwCounters)
				in.seconds = at.Sub(prev.at).Seconds()
			}
			if had && !at.After(prev.at) {
				mem = prev // no interval: keep the older reading for the next delta
			}
			next[k] = mem
			ports = append(ports, in)
		}
	}
	summary["ports"] = int64(len(ports))
	summary["activePorts"] = active
	e.ports = next
	return ports, summary
}

// counterDeltas is current minus previous for counters read both times;
// one that went down (a driver reload, a counter reset) has no delta.
func counterDeltas(cur, prev map[string]uint64) map[string]any {
	m := make(map[string]any, len(cur))
	for name, v := range cur {
		if p, ok := prev[name]; ok && v >= p {
			m[name] = i64(v - p)
		}
	}
	return m
}

func deviceVars(d *fabric.Device) map[string]any {
	return map[string]any{
		"name": d.Name, "driver": d.Driver, "kind": d.Kind, "pciBusId": d.PCIBusID, "boardId": d.BoardID,
		"firmwareVersion": d.FirmwareVersion, "nodeGuid": d.NodeGUID, "errors": stringList(d.Errors),
	}
}

func portVars(p *fabric.Port, seenActive bool, expectedRate float64) map[string]any {
	m := map[string]any{
		"num": int64(p.Num), "state": p.State, "physState": p.PhysState, "linkLayer": p.LinkLayer,
		"seenActive": seenActive, "expectedRateGbps": expectedRate,
		"counters": counterVars(p.Counters), "hwCounters": counterVars(p.HWCounters),
	}
	putF64(m, "rateGbps", p.RateGbps)
	return m
}

func counterVars(c map[string]uint64) map[string]any {
	m := make(map[string]any, len(c))
	for k, v := range c {
		m[k] = i64(v)
	}
	return m
}

func stringList(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}
