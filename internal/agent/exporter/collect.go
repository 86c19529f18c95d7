package exporter

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpuheal/gpuheal/internal/gpu"
)

// clockReasons name every NVML clock event bit, so that
// gpuheal_gpu_clock_event_active can be alerted on without bit arithmetic
// in PromQL. Names follow nvidia-smi's clocks_event_reasons elements.
var clockReasons = []struct {
	name string
	bit  uint64
}{
	{"gpu_idle", gpu.ClockEventGPUIdle},
	{"applications_clocks_setting", gpu.ClockEventAppSetting},
	{"sw_power_cap", gpu.ClockEventSwPowerCap},
	{"hw_slowdown", gpu.ClockEventHwSlowdown},
	{"sync_boost", gpu.ClockEventSyncBoost},
	{"sw_thermal", gpu.ClockEventSwThermal},
	{"hw_thermal", gpu.ClockEventHwThermal},
	{"hw_power_brake", gpu.ClockEventHwPowerBrake},
	{"display_clock_setting", gpu.ClockEventDisplayClock},
}

const mhz = 1e6 // snapshots carry MHz; metrics use base units

// Describe sends every descriptor; the set is fixed, so the registry can
// check label consistency up front.
func (e *Exporter) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range e.d.all {
		ch <- d
	}
}

// Collect sends the series rendered by the last Update; it never waits on
// a GPU. The metrics are made here rather than kept from Update: Collect
// runs once per Update (the scrape cache encodes its result), and ~1,000
// const metrics with their label pairs would hold 0.7 MB of heap between
// Updates that the compact form holds in 0.1 MB.
func (e *Exporter) Collect(ch chan<- prometheus.Metric) {
	e.send(ch, e.metrics.Load())
	e.send(ch, e.fabric.Load())
}

func (e *Exporter) send(ch chan<- prometheus.Metric, r *rendered) {
	if r == nil {
		return
	}
	for i := range r.series {
		s := &r.series[i]
		ch <- sample{s: s, values: r.labels[s.off : s.off+uint32(s.n)], names: e.d.labels[s.d]}
	}
}

// rendered is what one Update renders: series whose label values are
// windows of one shared slice, so that rendering allocates twice, not
// once per series.
type rendered struct {
	series []series
	labels []string
}

type series struct {
	d   *prometheus.Desc
	v   float64
	off uint32
	n   uint16
	t   prometheus.ValueType
}

// render turns one Update's inputs and the query-error totals into series;
// e.mu must be held. It runs once per collection, not per scrape.
func (e *Exporter) render(snap *gpu.NodeSnapshot, results []CollectorResult, prev *rendered) *rendered {
	d := e.d
	m := newEmitter(prev)
	for _, r := range results {
		name := label(r.Name)
		m.add(d.collectorSuccess, prometheus.GaugeValue, b2f(r.Success), name)
		m.add(d.collectorDuration, prometheus.GaugeValue, r.Duration.Seconds(), name)
	}
	for k, v := range e.totals {
		m.add(d.queryErrors, prometheus.CounterValue, float64(v),
			label(k.gpu), label(k.uuid), label(k.bus), label(k.model), label(k.query))
	}
	if snap == nil {
		return &m.out
	}
	e.renderNode(&m, snap)
	for i := range snap.GPUs {
		g := &snap.GPUs[i]
		m.lv = [nGPULabels]string{gpuLabel(g.Index), label(g.UUID), label(g.PCIBusID), label(g.Name)}
		e.renderGPU(&m, g)
	}
	return &m.out
}

func (e *Exporter) renderNode(m *emitter, s *gpu.NodeSnapshot) {
	d := e.d
	gauge := func(desc *prometheus.Desc, v float64, lv ...string) {
		m.add(desc, prometheus.GaugeValue, v, lv...)
	}
	gauge(d.nodeInfo, 1, label(s.Backend), label(s.DriverVersion), label(s.CUDADriverVersion),
		label(s.KernelRelease), label(s.KernelModuleVersion))
	if s.ExpectedGPUs > 0 { // 0 means unknown, not "none expected"
		gauge(d.nodeGPUs, float64(s.ExpectedGPUs), "expected")
	}
	gauge(d.nodeGPUs, float64(s.FoundGPUs), "found")
	if s.DriverVersion != "" && s.KernelModuleVersion != "" {
		gauge(d.driverMismatch, b2f(s.DriverVersion != s.KernelModuleVersion))
	}
	if s.NVSwitch {
		gauge(d.fabricMgrUp, b2f(s.FabricManager == "running"))
	}
	// No /dev/nvidia* at all is a real reading (driver not loaded), so an
	// empty list is exported as 0.
	gauge(d.deviceFiles, float64(len(s.DeviceNodes)))
	if !s.Time.IsZero() {
		gauge(d.snapshotTime, float64(s.Time.UnixNano())/1e9)
	}
}

func (e *Exporter) renderGPU(m *emitter, g *gpu.GPUSnapshot) {
	d := e.d
	m.gauge(d.gpuInfo, 1, label(g.Serial), label(g.VBIOS))
	m.gauge(d.missing, b2f(g.Missing))

	m.float(d.util, g.UtilizationGPUPercent, 1)
	m.float(d.memUtil, g.UtilizationMemoryPercent, 1)
	m.uint(d.memUsed, prometheus.GaugeValue, g.MemoryUsedBytes)
	m.uint(d.memTotal, prometheus.GaugeValue, g.MemoryTotalBytes)
	m.float(d.temp, g.TemperatureCelsius, 1)
	m.float(d.memTemp, g.MemoryTemperatureCelsius, 1)
	m.float(d.power, g.PowerDrawWatts, 1)
	m.float(d.powerLimit, g.PowerLimitWatts, 1)
	m.float(d.smClock, g.SMClockMHz, mhz)
	m.float(d.memClock, g.MemoryClockMHz, mhz)
	if r := g.ClockEventReasons; r != nil {
		m.gauge(d.clockReasons, float64(*r))
		for _, cr := range clockReasons {
			m.gauge(d.clockActive, b2f(*r&cr.bit != 0), cr.name)
		}
	}

	m.bool(d.eccMode, g.ECCModeEnabled)
	m.uint(d.eccErrors, prometheus.CounterValue, g.ECC.VolatileCorrected, "corrected", "volatile")
	m.uint(d.eccErrors, prometheus.CounterValue, g.ECC.VolatileUncorrected, "uncorrected", "volatile")
	m.uint(d.eccErrors, prometheus.CounterValue, g.ECC.AggregateCorrected, "corrected", "aggregate")
	m.uint(d.eccErrors, prometheus.CounterValue, g.ECC.AggregateUncorrected, "uncorrected", "aggregate")
	if rp := g.RetiredPages; rp != nil {
		m.gauge(d.retired, float64(rp.SingleBit), "single_bit")
		m.gauge(d.retired, float64(rp.DoubleBit), "double_bit")
		m.gauge(d.retiredPending, b2f(rp.Pending))
	}
	if rr := g.RemappedRows; rr != nil {
		m.gauge(d.remapped, float64(rr.Correctable), "correctable")
		m.gauge(d.remapped, float64(rr.Uncorrectable), "uncorrectable")
		m.gauge(d.remappedPending, b2f(rr.Pending))
		m.gauge(d.remappedFailure, b2f(rr.Failure))
	}

	m.uint(d.pcieReplay, prometheus.CounterValue, g.PCIe.ReplayCounter)
	m.uint(d.pcieGen, prometheus.GaugeValue, g.PCIe.LinkGenCurrent, "current")
	m.uint(d.pcieGen, prometheus.GaugeValue, g.PCIe.LinkGenMax, "max")
	m.uint(d.pcieWidth, prometheus.GaugeValue, g.PCIe.LinkWidthCurrent, "current")
	m.uint(d.pcieWidth, prometheus.GaugeValue, g.PCIe.LinkWidthMax, "max")
	for _, l := range g.NVLink {
		link := strconv.Itoa(l.Link)
		m.gauge(d.nvlinkUp, b2f(l.Active), link)
		m.uint(d.nvlinkErrors, prometheus.CounterValue, l.CRCFlit, link, "crc_flit")
		m.uint(d.nvlinkErrors, prometheus.CounterValue, l.CRCData, link, "crc_data")
		m.uint(d.nvlinkErrors, prometheus.CounterValue, l.Replay, link, "replay")
		m.uint(d.nvlinkErrors, prometheus.CounterValue, l.Recovery, link, "recovery")
	}
	for code, n := range g.XidTotals {
		m.metric(d.xid, prometheus.CounterValue, float64(n), strconv.FormatUint(code, 10))
	}

	if ra := g.RecoveryAction; ra != nil {
		m.gauge(d.recovery, float64(*ra))
	}
	m.bool(d.resetRequired, g.ResetRequired)
	m.bool(d.drainReset, g.DrainAndResetRecommended)
	m.bool(d.persistence, g.PersistenceMode)
	m.bool(d.mig, g.MIGEnabled)
	if g.FabricState != "" || g.FabricStatus != "" {
		m.gauge(d.fabric, 1, label(g.FabricState), label(g.FabricStatus))
	}
}

// emitter collects series. lv holds the current GPU's label values.
type emitter struct {
	out rendered
	lv  [nGPULabels]string
}

// newEmitter sizes its output from the last Update's: appending from
// empty would allocate about twice what is kept.
func newEmitter(prev *rendered) emitter {
	m := emitter{}
	if prev != nil {
		m.out.series = make([]series, 0, len(prev.series))
		m.out.labels = make([]string, 0, len(prev.labels))
	}
	return m
}

// add appends a series with exactly the label values given.
func (m *emitter) add(d *prometheus.Desc, t prometheus.ValueType, v float64, lv ...string) {
	m.out.series = append(m.out.series, series{d: d, t: t, v: v, off: uint32(len(m.out.labels)), n: uint16(len(lv))})
	m.out.labels = append(m.out.labels, lv...)
}

// metric appends a series of the current GPU.
func (m *emitter) metric(d *prometheus.Desc, t prometheus.ValueType, v float64, extra ...string) {
	m.out.series = append(m.out.series, series{d: d, t: t, v: v, off: uint32(len(m.out.labels)), n: uint16(len(m.lv) + len(extra))})
	m.out.labels = append(append(m.out.labels, m.lv[:]...), extra...)
}

func (m *emitter) gauge(d *prometheus.Desc, v float64, extra ...string) {
	m.metric(d, prometheus.GaugeValue, v, extra...)
}

// float, uint and bool skip nil readings: unsupported is absent, never 0.
func (m *emitter) float(d *prometheus.Desc, p *float64, scale float64) {
	if p != nil {
		m.gauge(d, *p*scale)
	}
}

func (m *emitter) uint(d *prometheus.Desc, t prometheus.ValueType, p *uint64, extra ...string) {
	if p != nil {
		m.metric(d, t, float64(*p), extra...)
	}
}

func (m *emitter) bool(d *prometheus.Desc, p *bool) {
	if p != nil {
		m.gauge(d, b2f(*p))
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func gpuLabel(index int) string { return strconv.Itoa(index) }
