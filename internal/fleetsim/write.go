package fleetsim

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/gpuheal/gpuheal/internal/predict"
	"github.com/gpuheal/gpuheal/internal/predict/trace"
)

// Source names the generator in trace manifests; bump it when the same
// options would give different traces.
const Source = "fleetsim/1"

// Write simulates the fleet and writes its traces into dir (created if
// needed): one file per GPU slot and manifest.json. It returns the
// manifest written.
func Write(ctx context.Context, dir string, o Options) (*trace.Manifest, error) {
	if err := o.complete(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating trace directory: %w", err)
	}
	m := &trace.Manifest{
		Format: trace.ManifestFormat, Version: trace.ManifestVersion,
		Source: source(&o), Preset: o.Preset.Name, Seed: o.Seed,
		GPUs: o.GPUs, Days: o.Days, Start: o.Start, IntervalSeconds: int(predict.Interval.Seconds()),
		FailuresPer1000GPUHours: o.failureRate(), Failures: []trace.Failure{},
	}
	results := make([]slotResult, o.GPUs)
	var (
		next  atomic.Int64
		bytes atomic.Int64
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	for range min(o.Workers, o.GPUs) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= o.GPUs || ctx.Err() != nil {
					return
				}
				res, err := simulateSlot(&o, i)
				if err == nil {
					err = os.WriteFile(filepath.Join(dir, trace.GPUFile(i)), res.file, 0o644)
				}
				if err != nil {
					mu.Lock()
					if first == nil {
						first = fmt.Errorf("gpu %d: %w", i, err)
					}
					mu.Unlock()
					next.Store(int64(o.GPUs))
					return
				}
				bytes.Add(int64(len(res.file)))
				res.file = nil
				results[i] = res
			}
		})
	}
	wg.Wait()
	if first != nil {
		return nil, first
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for _, r := range results {
		m.Failures = append(m.Failures, r.failures...)
		m.Episodes = append(m.Episodes, r.episodes...)
	}
	m.Bytes = bytes.Load()
	if err := trace.WriteManifest(dir, m); err != nil {
		return nil, err
	}
	return m, nil
}

func source(o *Options) string {
	s := Source + " preset=" + o.Preset.Name
	if o.Preset.BenignScale != 1 {
		s += fmt.Sprintf(" benign-scale=%g", o.Preset.BenignScale)
	}
	if h := o.Hazard; !h.Off() {
		s += fmt.Sprintf(" lemon-share=%g lemon-multiple=%g rack-size=%d top-multiple=%g busy-share=%g busy-multiple=%g",
			h.LemonShare, h.LemonMultiple, h.RackSize, h.TopMultiple, h.BusyShare, h.BusyMultiple)
	}
	return s
}
