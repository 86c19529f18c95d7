package exporter

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpuheal/gpuheal/internal/gpu"
)

// fabricDescs describe the node's RDMA devices (gpuheal_fabric_*), from
// the snapshot's Fabric. Counters are passed through under the name the
// kernel gives them, as a label: a fixed metric per counter would drop the
// ones a new driver adds, and the reader bounds how many there are (256 a
// directory). The metric names follow the sysfs directories (counters/,
// hw_counters/), which also keeps promlint from reading "counter" as a
// type in the name. newDescs builds them.
type fabricDescs struct {
	devices, expected, readErrors *prometheus.Desc
	deviceInfo, deviceHW          *prometheus.Desc
	portUp, portInfo, portRate    *prometheus.Desc
	portCounters, portHWCounters  *prometheus.Desc
}

// renderFabric renders snap's fabric, or nothing when the agent did not
// read one (no series at all, not "0 devices").
func (e *Exporter) renderFabric(snap *gpu.NodeSnapshot, prev *rendered) *rendered {
	if snap == nil || snap.Fabric == nil {
		return nil
	}
	s := snap.Fabric
	m := newEmitter(prev)
	d := &e.d.fab
	gauge := func(desc *prometheus.Desc, v float64, lv ...string) { m.add(desc, prometheus.GaugeValue, v, lv...) }
	counter := func(desc *prometheus.Desc, v uint64, lv ...string) {
		m.add(desc, prometheus.CounterValue, float64(v), lv...)
	}

	gauge(d.devices, float64(len(s.Devices)))
	if s.ExpectedDevices > 0 { // 0 means unknown, not "none expected"
		gauge(d.expected, float64(s.ExpectedDevices))
	}
	gauge(d.readErrors, float64(len(s.Errors)), "")
	for i := range s.Devices {
		dev := &s.Devices[i]
		name := label(dev.Name)
		gauge(d.deviceInfo, 1, name, label(dev.Kind), label(dev.Driver), label(dev.PCIBusID),
			label(dev.BoardID), label(dev.FirmwareVersion), label(dev.NodeGUID))
		gauge(d.readErrors, float64(len(dev.Errors)), name)
		for c, v := range dev.HWCounters { // the registry sorts the series
			counter(d.deviceHW, v, name, label(c))
		}
		for j := range dev.Ports {
			p := &dev.Ports[j]
			port := strconv.Itoa(p.Num)
			// An unread state is absent, not down.
			if p.State != "" {
				gauge(d.portUp, b2f(p.State == "ACTIVE"), name, port, label(dev.Kind))
			}
			gauge(d.portInfo, 1, name, port, label(p.State), label(p.PhysState), label(p.LinkLayer))
			if p.RateGbps != nil {
				gauge(d.portRate, *p.RateGbps*1e9/8, name, port)
			}
			for c, v := range p.Counters {
				counter(d.portCounters, v, name, port, label(c))
			}
			for c, v := range p.HWCounters {
				counter(d.portHWCounters, v, name, port, label(c))
			}
		}
	}
	return &m.out
}
