//go:build cgo

package nvml

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuheal/gpuheal/internal/gpu"
)

// Library is go-nvml's interface to libnvidia-ml.
type Library = nvml.Interface

// Source reads every GPU through NVML. It implements gpu.Source.
type Source struct {
	lib  Library
	opts Options
	syms symbols // which of the calls old drivers lack the library has

	mu      sync.Mutex // one snapshot at a time: "events since the last snapshot" needs an order
	closed  bool
	devices []*device
	node    nodeState
	events  *events // nil when the driver delivers no events
}

var _ gpu.Source = (*Source)(nil)

// New initializes NVML and finds the GPUs. It fails, with an error that
// starts "no NVIDIA GPU found: ", when NVML cannot be used at all: no
// library (none under DriverRoot), no driver, or no GPU while none was
// expected.
func New(opts Options) (*Source, error) {
	opts = opts.withDefaults()
	lib := opts.Lib
	if lib == nil {
		path, err := FindLibrary(opts.DriverRoot)
		if err != nil {
			return nil, fmt.Errorf("no NVIDIA GPU found: %w", err)
		}
		if path == "" {
			lib = nvml.New()
		} else {
			lib = nvml.New(nvml.WithLibraryPath(path))
		}
	}
	src := &Source{lib: lib, opts: opts}

	s := newSession(context.Background(), opts.Clock, opts.InitTimeout, opts.InitTimeout, &src.node.guard)
	if !do(s, "Init", lib.Init) {
		return nil, noGPU("initializing NVML", s, "Init")
	}
	src.syms = lookupSymbols(lib) // needs the library loaded, which Init does
	s = src.nodeSession(context.Background())
	count, ok := get(s, "DeviceGetCount", lib.DeviceGetCount)
	if !ok {
		_ = src.shutdown() // already failing: the first error is the one to report
		return nil, noGPU("counting GPUs", s, "DeviceGetCount")
	}
	if count == 0 && opts.ExpectedGPUs == 0 {
		_ = src.shutdown() // already failing: the first error is the one to report
		return nil, errors.New("no NVIDIA GPU found: NVML sees no GPU")
	}
	for i := range count {
		d := &device{index: i}
		ds := src.deviceSession(context.Background(), d)
		d.handle, _ = get(ds, "DeviceGetHandleByIndex", func() (nvml.Device, nvml.Return) {
			return lib.DeviceGetHandleByIndex(i)
		})
		// A GPU without a handle now is retried by every snapshot.
		src.devices = append(src.devices, d)
	}
	src.events = startEvents(src)
	return src, nil
}

func noGPU(doing string, s *session, query string) error {
	msg := "not supported"
	if len(s.errs) > 0 {
		msg = s.errs[0].Message
	}
	return fmt.Errorf("no NVIDIA GPU found: %s: %s: %s", doing, query, msg)
}

// Name is "nvml".
func (*Source) Name() string { return "nvml" }

// Snapshot reads the node and all GPUs in parallel. Per-GPU failures land
// in that GPU's Errors; the error return means the Source is closed or ctx
// ended before the read began.
func (src *Source) Snapshot(ctx context.Context) (*gpu.NodeSnapshot, error) {
	src.mu.Lock()
	defer src.mu.Unlock()
	if src.closed {
		return nil, errors.New("nvml source is closed")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	snap := &gpu.NodeSnapshot{
		Time:         src.opts.Clock.Now(),
		Backend:      "nvml",
		ExpectedGPUs: src.opts.ExpectedGPUs,
		GPUs:         make([]gpu.GPUSnapshot, len(src.devices)),
	}
	var wg sync.WaitGroup
	wg.Go(func() { src.readNode(ctx, snap) })
	for i, d := range src.devices {
		wg.Go(func() { snap.GPUs[i] = src.readGPU(ctx, d) })
	}
	wg.Wait()

	if src.events != nil {
		src.events.drain(snap)
	}
	for _, g := range snap.GPUs {
		if !g.Missing {
			snap.FoundGPUs++
		}
	}
	return snap, nil
}

// Close stops the event reader and shuts NVML down. When the event
// reader is stuck inside the driver, the event set and NVML are left
// alone: freeing them under a running wait could crash the process.
func (src *Source) Close() error {
	src.mu.Lock()
	defer src.mu.Unlock()
	if src.closed {
		return nil
	}
	src.closed = true
	if src.events != nil {
		if err := src.events.close(src); err != nil {
			return err
		}
	}
	return src.shutdown()
}

func (src *Source) shutdown() error {
	s := src.nodeSession(context.Background())
	if !do(s, "Shutdown", src.lib.Shutdown) && len(s.errs) > 0 {
		return fmt.Errorf("shutting down NVML: %s", s.errs[0].Message)
	}
	return nil
}

func (src *Source) nodeSession(ctx context.Context) *session {
	return newSession(ctx, src.opts.Clock, src.opts.CallTimeout, src.opts.ReadTimeout, &src.node.guard)
}

func (src *Source) deviceSession(ctx context.Context, d *device) *session {
	return newSession(ctx, src.opts.Clock, src.opts.CallTimeout, src.opts.ReadTimeout, &d.guard)
}
