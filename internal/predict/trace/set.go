package trace

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
)

// Set is an opened trace directory.
type Set struct {
	Dir      string
	Manifest *Manifest
}

// Open reads a trace directory's manifest.
func Open(dir string) (*Set, error) {
	m, err := ReadManifest(dir)
	if err != nil {
		return nil, err
	}
	return &Set{Dir: dir, Manifest: m}, nil
}

// Decoder opens GPU i's file. The file is read whole (a 30-day file is a
// few hundred KiB) and checked against the manifest.
func (s *Set) Decoder(i int) (*Decoder, error) {
	path := filepath.Join(s.Dir, GPUFile(i))
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading trace: %w", err)
	}
	d, err := NewDecoder(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if h := d.Header(); h.GPU != i || h.Interval != s.Manifest.Interval() {
		return nil, fmt.Errorf("%s: header says gpu %d, interval %s; the manifest wants gpu %d, interval %s",
			path, h.GPU, h.Interval, i, s.Manifest.Interval())
	}
	return d, nil
}

// ForEachGPU calls fn for every GPU of the set on up to workers
// goroutines; worker is in [0, workers) so that fn can keep per-worker
// state. It stops at the first error or when ctx ends. fn sees GPUs in no
// particular order: callers that need a deterministic result store it by
// GPU and combine in GPU order.
func (s *Set) ForEachGPU(ctx context.Context, workers int, fn func(worker, gpu int, d *Decoder) error) error {
	workers = max(1, min(workers, s.Manifest.GPUs))
	var (
		next     atomic.Int64
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	for w := range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= s.Manifest.GPUs || ctx.Err() != nil {
					return
				}
				d, err := s.Decoder(i)
				if err == nil {
					err = fn(w, i, d)
				}
				if err != nil {
					errOnce.Do(func() { firstErr = err })
					next.Store(int64(s.Manifest.GPUs))
					return
				}
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	return ctx.Err()
}
