package promsource

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/gpuheal/gpuheal/internal/predict"
	"github.com/gpuheal/gpuheal/internal/predict/trace"
)

// SlotsFile is written next to the trace files to say which GPU each
// trace slot is: for reading alarms back to nodes, and for tests.
const SlotsFile = "gpus.json"

// Slot is one GPU of the history: a trace slot.
type Slot struct {
	GPU  int    `json:"gpu"` // index in the trace directory
	Node string `json:"node"`
	UUID string `json:"uuid,omitempty"`
	// Index is the exporter's gpu label, the backend's enumeration index.
	Index   string    `json:"index,omitempty"`
	First   time.Time `json:"first"`
	Last    time.Time `json:"last"`
	Samples int64     `json:"samples"`
	// Missing counts samples with gpuheal_gpu_missing == 1.
	Missing int64 `json:"missing,omitempty"`
}

// Telemetry is what Fetch read and wrote.
type Telemetry struct {
	URL        string
	Start, End time.Time // on the step grid
	Step       time.Duration
	Slots      []Slot
	// Samples written; Gaps are steps inside a slot's [First, Last]
	// where none of its series had a point.
	Samples, Gaps int64
	// Queries and the points their results held; Chunks of the range.
	Queries, Points int64
	Chunks          int
	// Bytes of GPU files written.
	Bytes   int64
	Seconds float64
}

// Fetch reads the agent's metrics for o's range and writes one trace file
// per GPU slot, and SlotsFile, into dir (created if needed). It does not
// write the manifest: Build adds the labels and writes it.
func Fetch(ctx context.Context, dir string, o Options) (*Telemetry, error) {
	began := time.Now()
	if err := o.complete(); err != nil {
		return nil, err
	}
	c, err := newClient(&o)
	if err != nil {
		return nil, err
	}
	f := &fetcher{o: &o, c: c, slots: map[string]*slotState{}}
	qs := queries(o.Selector, o.NodeLabel+", uuid, gpu")
	raw, err := f.rawSeries(ctx, qs)
	if err != nil {
		return nil, err
	}
	steps := int(o.End.Sub(o.Start)/o.Step) + 1
	chunk := min(o.MaxPoints, max(1, o.MaxSlotPoints/max(1, raw[qs[0].metric])))
	tel := &Telemetry{URL: c.url, Start: o.Start, End: o.End, Step: o.Step}
	for first := 0; first < steps; first += chunk {
		n := min(chunk, steps-first)
		if err := f.chunk(ctx, qs, raw, first, n); err != nil {
			return nil, err
		}
		tel.Chunks++
		o.Log.Info("read chunk", "from", o.Start.Add(time.Duration(first)*o.Step), "steps", n, "gpus", len(f.order),
			"samples", f.samples, "seconds", time.Since(began).Seconds())
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating trace directory: %w", err)
	}
	for _, st := range f.order {
		data := st.enc.Bytes()
		if err := os.WriteFile(filepath.Join(dir, trace.GPUFile(st.GPU)), data, 0o644); err != nil {
			return nil, fmt.Errorf("writing trace: %w", err)
		}
		st.enc = nil
		tel.Bytes += int64(len(data))
		tel.Slots = append(tel.Slots, st.Slot)
		tel.Gaps += int64(st.Last.Sub(st.First)/o.Step) + 1 - st.Samples
	}
	data, err := json.MarshalIndent(tel.Slots, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, SlotsFile), append(data, '\n'), 0o644); err != nil {
		return nil, fmt.Errorf("writing trace: %w", err)
	}
	tel.Samples, tel.Queries, tel.Points = f.samples, c.queries.Load(), c.points.Load()
	tel.Seconds = time.Since(began).Seconds()
	return tel, nil
}

// fetcher carries the slots from chunk to chunk.
type fetcher struct {
	o       *Options
	c       *client
	slots   map[string]*slotState
	order   []*slotState // by trace index
	samples int64
	buf     predict.Sample
}

// rawSeries counts the raw series of each metric the queries read. It
// also makes a history without the agent's metrics fail early, saying so.
func (f *fetcher) rawSeries(ctx context.Context, qs []query) (map[string]int, error) {
	raw := map[string]int{}
	for _, q := range qs {
		if _, done := raw[q.metric]; done {
			continue
		}
		sel := q.metric + "{" + f.o.Selector + "}"
		n, err := f.c.seriesCount(ctx, sel, f.o.Start, f.o.End)
		if err != nil {
			return nil, err
		}
		raw[q.metric] = n
		if q.metric == qs[0].metric && n == 0 {
			return nil, fmt.Errorf("no series %s at Prometheus %s from %s to %s: is gpuheal-agent scraped there, "+
				"and does the selector match?", sel, f.c.url, f.o.Start.Format(time.RFC3339), f.o.End.Format(time.RFC3339))
		}
	}
	return raw, nil
}

// emit turns a chunk's columns into samples. Slots are visited in key
// order, so that trace indices do not depend on which query answered
// first.
func (f *fetcher) emit(ch *chunk) error {
	keys := make([]string, 0, len(ch.slots))
	for k, sc := range ch.slots {
		keys = append(keys, k)
		slices.SortFunc(sc.xids, func(a, b xidSeries) int { return int(a.code) - int(b.code) })
	}
	slices.Sort(keys)
	s := &f.buf
	for _, k := range keys {
		sc := ch.slots[k]
		st := sc.st
		for i := range ch.n {
			t := ch.start.Add(time.Duration(i) * f.o.Step)
			if !sc.sample(i, t, s) {
				continue
			}
			if st.enc == nil {
				st.GPU, st.First = len(f.order), t
				st.enc = trace.NewEncoder(st.GPU, t, f.o.Step)
				f.order = append(f.order, st)
			}
			if err := st.enc.Add(s); err != nil {
				return fmt.Errorf("GPU %s on node %s: %w", st.UUID, st.Node, err)
			}
			st.Last = t
			st.Samples++
			if s.Missing {
				st.Missing++
			}
			f.samples++
		}
	}
	return nil
}
