package smi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os/exec"
	"strings"
	"time"

	"github.com/gpuheal/gpuheal/internal/gpu"
)

// Runner runs a command and returns its standard output. It is the seam
// tests replace; the default runs the binary with os/exec.
type Runner func(ctx context.Context, path string, args ...string) ([]byte, error)

// Options configure a Source. The zero value is usable.
type Options struct {
	// Path is the nvidia-smi binary; default "nvidia-smi", looked up in PATH.
	Path string
	// Timeout bounds one run; default 10s. nvidia-smi on a GPU that is
	// falling off the bus can block for minutes inside the driver.
	Timeout time.Duration
	// Run executes the command; default ExecRunner.
	Run Runner
	// Now stamps snapshots; default time.Now.
	Now func() time.Time
}

// Source is the nvidia-smi backend of gpu.Source.
type Source struct {
	path    string
	timeout time.Duration
	run     Runner
	now     func() time.Time
	// busy holds a token while a run is in flight. A run stuck in the
	// kernel cannot be killed, so a new one is refused rather than piling
	// another unkillable process on the same GPU every interval.
	busy chan struct{}
}

var _ gpu.Source = (*Source)(nil)

// New returns a Source with defaults filled in.
func New(opts Options) *Source {
	s := &Source{path: opts.Path, timeout: opts.Timeout, run: opts.Run, now: opts.Now, busy: make(chan struct{}, 1)}
	if s.path == "" {
		s.path = "nvidia-smi"
	}
	if s.timeout <= 0 {
		s.timeout = 10 * time.Second
	}
	if s.run == nil {
		s.run = ExecRunner
	}
	if s.now == nil {
		s.now = time.Now
	}
	return s
}

// Name implements gpu.Source.
func (s *Source) Name() string { return BackendName }

// Close implements gpu.Source; nvidia-smi holds nothing between runs.
func (s *Source) Close() error { return nil }

// Snapshot runs `nvidia-smi -q -x` once and parses its output.
func (s *Source) Snapshot(ctx context.Context) (*gpu.NodeSnapshot, error) {
	select {
	case s.busy <- struct{}{}:
	default:
		return nil, fmt.Errorf("%s -q -x: the previous run has not exited yet (a GPU may be hung in the driver)", s.path)
	}
	start := s.now()
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()

	type result struct {
		out []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := s.run(ctx, s.path, "-q", "-x")
		// The run has exited: free the slot before handing over the result,
		// so a Snapshot called right after this one returns never finds it
		// taken.
		<-s.busy
		done <- result{out, err}
	}()
	// Waiting on ctx as well as on the runner keeps the timeout even when
	// the process ignores its kill (uninterruptible sleep in the driver).
	var res result
	select {
	case res = <-done:
	case <-ctx.Done():
		return nil, s.ctxError(ctx)
	}

	if res.err != nil {
		if ctx.Err() != nil {
			return nil, s.ctxError(ctx)
		}
		if errors.Is(res.err, exec.ErrNotFound) || errors.Is(res.err, fs.ErrNotExist) {
			return nil, fmt.Errorf("no NVIDIA GPU found: nvidia-smi not found at %s: %w", s.path, res.err)
		}
		if len(bytes.TrimSpace(res.out)) == 0 {
			return nil, fmt.Errorf("running %s -q -x: %w", s.path, res.err)
		}
	}
	snap, err := parse(res.out)
	if err != nil {
		if res.err != nil {
			return nil, fmt.Errorf("running %s -q -x: %w (and its output: %w)", s.path, res.err, err)
		}
		return nil, err
	}
	if res.err != nil {
		// nvidia-smi exits non-zero when some GPU failed but still prints
		// the others; keep them and say what went wrong.
		snap.Errors = append(snap.Errors, gpu.QueryError{Query: "nvidia-smi -q -x", Message: res.err.Error()})
	}
	snap.Time = start
	return snap, nil
}

func (s *Source) ctxError(ctx context.Context) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%s -q -x timed out after %v: %w", s.path, s.timeout, ctx.Err())
	}
	return fmt.Errorf("%s -q -x: %w", s.path, ctx.Err())
}

// ExecRunner runs path with os/exec and returns its standard output; a
// non-zero exit becomes an error carrying the start of standard error.
func ExecRunner(ctx context.Context, path string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, path, args...)
	var stdout boundedBuffer
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// Without WaitDelay, a child that inherited stdout would keep Wait
	// blocked after the kill.
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	out := stdout.buf.Bytes()
	if stdout.over && err == nil {
		return nil, errTooLarge()
	}
	if err != nil {
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			return out, fmt.Errorf("%w: %s", err, head([]byte(msg)))
		}
		return out, err
	}
	return out, nil
}
