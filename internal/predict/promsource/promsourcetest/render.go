package promsourcetest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

	"github.com/gpuheal/gpuheal/internal/predict"
)

// refresh: a series that keeps its value gets a point at least this
// often, under Prometheus' 5 min lookback, so that a range query returns
// it at every step though the file holds only its changes. That keeps a
// two-day fleet's file to a few hundred thousand lines.
const refresh = 4 * time.Minute

// point is one series' reading in a sample: ok false when the agent
// would not export it then.
type point struct {
	labels string // extra labels, with a leading comma
	v      float64
	ok     bool
}

// family is one metric of the agent and how a sample renders as it.
type family struct {
	name, typ string
	// always: exported for a missing GPU too (the Xid totals).
	always bool
	points func(s *predict.Sample, out []point) []point
}

// families render Sample fields as the exporter names them
// (internal/agent/exporter, docs/metrics.md); promsource reads them back.
func families() []family {
	gauge := func(name string, g int, scale float64) family {
		return family{name: name, typ: "gauge", points: func(s *predict.Sample, out []point) []point {
			return append(out, point{v: float64(s.Gauges[g]) * scale, ok: true})
		}}
	}
	counter := func(s *predict.Sample, k int) (float64, bool) {
		return float64(s.Counters[k]), s.CountersRead&(1<<k) != 0
	}
	known := func(v uint8) point { return point{v: float64(v), ok: v != 0} }
	remap := func(s *predict.Sample) bool {
		return s.CountersRead&(1<<predict.CounterRemappedCorrectable|1<<predict.CounterRemappedUncorrectable) != 0
	}
	fs := []family{
		{name: "gpuheal_gpu_missing", typ: "gauge", always: true, points: func(s *predict.Sample, out []point) []point {
			return append(out, point{v: b2f(s.Missing), ok: true})
		}},
		gauge("gpuheal_gpu_utilization_percent", predict.GaugeUtilizationPercent, 1),
		gauge("gpuheal_gpu_memory_used_bytes", predict.GaugeMemoryUsedMiB, 1<<20),
		gauge("gpuheal_gpu_temperature_celsius", predict.GaugeTemperatureC, 1),
		gauge("gpuheal_gpu_memory_temperature_celsius", predict.GaugeMemoryTemperatureC, 1),
		gauge("gpuheal_gpu_power_draw_watts", predict.GaugePowerW, 1),
		gauge("gpuheal_gpu_sm_clock_hertz", predict.GaugeSMClockMHz, 1e6),
		{name: "gpuheal_gpu_clock_event_reasons", typ: "gauge", points: func(s *predict.Sample, out []point) []point {
			return append(out, point{v: float64(s.ClockEventReasons), ok: true})
		}},
		{name: "gpuheal_gpu_recovery_action", typ: "gauge", points: func(s *predict.Sample, out []point) []point {
			return append(out, point{v: float64(s.RecoveryAction), ok: true})
		}},
		{name: "gpuheal_gpu_pcie_link_generation", typ: "gauge", points: func(s *predict.Sample, out []point) []point {
			c, m := known(s.PCIeLinkGen), known(s.PCIeLinkGenMax)
			c.labels, m.labels = `,which="current"`, `,which="max"`
			return append(out, c, m)
		}},
		{name: "gpuheal_gpu_pcie_link_width", typ: "gauge", points: func(s *predict.Sample, out []point) []point {
			c, m := known(s.PCIeLinkWidth), known(s.PCIeLinkWidthMax)
			c.labels, m.labels = `,which="current"`, `,which="max"`
			return append(out, c, m)
		}},
		{name: "gpuheal_gpu_nvlink_up", typ: "gauge", points: func(s *predict.Sample, out []point) []point {
			for l := range int(s.NVLinkTotal) {
				out = append(out, point{labels: fmt.Sprintf(`,link="%d"`, l), v: b2f(l < int(s.NVLinkUp)), ok: true})
			}
			return out
		}},
		{name: "gpuheal_gpu_remapped_rows", typ: "gauge", points: func(s *predict.Sample, out []point) []point {
			c, cok := counter(s, predict.CounterRemappedCorrectable)
			u, uok := counter(s, predict.CounterRemappedUncorrectable)
			return append(out, point{`,kind="correctable"`, c, cok}, point{`,kind="uncorrectable"`, u, uok})
		}},
		{name: "gpuheal_gpu_remapped_rows_pending", typ: "gauge", points: func(s *predict.Sample, out []point) []point {
			return append(out, point{v: b2f(s.RemappedRowsPending), ok: remap(s)})
		}},
		{name: "gpuheal_gpu_remapped_rows_failure", typ: "gauge", points: func(s *predict.Sample, out []point) []point {
			return append(out, point{v: b2f(s.RemappedRowsFailure), ok: remap(s)})
		}},
		{name: "gpuheal_gpu_ecc_errors", typ: "counter", points: func(s *predict.Sample, out []point) []point {
			for _, e := range []struct {
				labels string
				k      int
			}{
				{`,type="corrected",scope="volatile"`, predict.CounterECCCorrected},
				{`,type="uncorrected",scope="volatile"`, predict.CounterECCUncorrected},
				{`,type="corrected",scope="aggregate"`, predict.CounterECCAggregateCorrected},
				{`,type="uncorrected",scope="aggregate"`, predict.CounterECCAggregateUncorrected},
			} {
				v, ok := counter(s, e.k)
				out = append(out, point{e.labels, v, ok})
			}
			return out
		}},
		{name: "gpuheal_gpu_pcie_replay", typ: "counter", points: func(s *predict.Sample, out []point) []point {
			v, ok := counter(s, predict.CounterPCIeReplay)
			return append(out, point{v: v, ok: ok})
		}},
		// The sum over links is what promsource reads: split it over two
		// links so that the test sees the sum made.
		{name: "gpuheal_gpu_nvlink_errors", typ: "counter", points: func(s *predict.Sample, out []point) []point {
			for i, typ := range []string{"crc_flit", "crc_data", "replay", "recovery"} {
				v, ok := counter(s, predict.CounterNVLinkCRCFlit+i)
				half := math.Floor(v / 2)
				out = append(out, point{fmt.Sprintf(`,link="0",type="%s"`, typ), half, ok},
					point{fmt.Sprintf(`,link="1",type="%s"`, typ), v - half, ok})
			}
			return out
		}},
	}
	return fs
}

// series is what the writer remembers of one series.
type series struct {
	v    float64
	at   time.Time
	live bool
}

// writer writes one family's points, only where the series changed, came
// back, or needs a refresh.
type writer struct {
	w    *bufio.Writer
	name string
	buf  []byte
}

func (w *writer) point(st *series, ident string, p point, t time.Time) {
	switch {
	case !p.ok:
		st.live = false
	case p.v != p.v: // NaN: unreported from now on; say so once
		if st.live {
			w.line(ident, p.labels, p.v, t)
		}
		st.live = false
	case !st.live || p.v != st.v || t.Sub(st.at) >= refresh:
		w.line(ident, p.labels, p.v, t)
		*st = series{v: p.v, at: t, live: true}
	}
}

// line writes one sample line. bufio keeps the first write error and
// Flush returns it.
func (w *writer) line(ident, labels string, v float64, t time.Time) {
	b := append(w.buf[:0], w.name...)
	b = append(append(append(append(b, '{'), ident...), labels...), "} "...)
	b = strconv.AppendFloat(b, v, 'g', -1, 64)
	b = strconv.AppendInt(append(b, ' '), t.Unix(), 10)
	w.buf = append(b, '\n')
	_, _ = w.w.Write(w.buf)
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// eachSample decodes GPU gpu's trace and calls fn for every sample it
// renders: samples inside the fleet's gaps are dropped.
func (f *Fleet) eachSample(gpu int, fn func(s *predict.Sample) error) error {
	d, err := f.Set.Decoder(gpu)
	if err != nil {
		return err
	}
	var s predict.Sample
	for {
		err := d.Next(&s)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if f.InGap(gpu, s.Time) {
			continue
		}
		if err := fn(&s); err != nil {
			return err
		}
	}
}

// writeOpenMetrics renders the fleet's traces as the agent's metrics with
// timestamps, family by family (OpenMetrics wants each family's lines
// together).
func (f *Fleet) writeOpenMetrics(out io.Writer) error {
	bw := bufio.NewWriterSize(out, 1<<20)
	var pts []point
	for _, fam := range families() {
		fmt.Fprintf(bw, "# TYPE %s %s\n", fam.name, fam.typ)
		name := fam.name
		if fam.typ == "counter" {
			name += "_total"
		}
		w := &writer{w: bw, name: name}
		for gpu := range f.Set.Manifest.GPUs {
			ident := f.labels(gpu)
			state := map[string]*series{}
			prev := time.Time{}
			err := f.eachSample(gpu, func(s *predict.Sample) error {
				if !prev.IsZero() && s.Time.Sub(prev) > f.Set.Manifest.Interval() {
					clear(state) // a gap: every series comes back
				}
				prev = s.Time
				pts = pts[:0]
				if !s.Missing || fam.always {
					pts = fam.points(s, pts)
				}
				seen := map[string]bool{}
				for _, p := range pts {
					st := state[p.labels]
					if st == nil {
						st = &series{}
						state[p.labels] = st
					}
					seen[p.labels] = true
					w.point(st, ident, p, s.Time)
				}
				for k, st := range state {
					if !seen[k] {
						st.live = false
					}
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
	}
	if err := f.writeXids(bw); err != nil {
		return err
	}
	fmt.Fprint(bw, "# EOF\n")
	return bw.Flush()
}

// writeXids renders gpuheal_gpu_xid_errors_total: totals by code since
// the agent started, exported for a missing GPU too. The agent restarts
// when a failed board is repaired (the node reboots), so totals restart
// then and a code's series is absent until it recurs.
func (f *Fleet) writeXids(bw *bufio.Writer) error {
	fmt.Fprintf(bw, "# TYPE gpuheal_gpu_xid_errors counter\n")
	w := &writer{w: bw, name: "gpuheal_gpu_xid_errors_total"}
	for gpu := range f.Set.Manifest.GPUs {
		ident := f.labels(gpu)
		restarts := f.restarts(gpu)
		totals := map[uint32]float64{}
		state := map[string]*series{}
		prev := time.Time{}
		err := f.eachSample(gpu, func(s *predict.Sample) error {
			if len(restarts) > 0 && !s.Time.Before(restarts[0]) {
				restarts = restarts[1:]
				clear(totals)
			}
			if !prev.IsZero() && s.Time.Sub(prev) > f.Set.Manifest.Interval() {
				clear(state)
			}
			prev = s.Time
			for _, x := range s.Xids {
				totals[x]++
			}
			for k, st := range state {
				code, _ := strconv.ParseUint(k[len(`,xid="`):len(k)-1], 10, 32)
				if _, ok := totals[uint32(code)]; !ok {
					st.live = false
				}
			}
			for code, n := range totals {
				labels := fmt.Sprintf(`,xid="%d"`, code)
				st := state[labels]
				if st == nil {
					st = &series{}
					state[labels] = st
				}
				w.point(st, ident, point{labels, n, true}, s.Time)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// restarts are the times the agent of GPU gpu's node restarted: each
// repair of the GPU.
func (f *Fleet) restarts(gpu int) []time.Time {
	var out []time.Time
	for _, fl := range f.Set.Manifest.LabelsFor(gpu).Failures() {
		out = append(out, fl.RepairedAt)
	}
	return out
}
