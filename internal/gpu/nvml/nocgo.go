//go:build !cgo

package nvml

import (
	"context"
	"errors"

	"github.com/gpuheal/gpuheal/internal/gpu"
)

// Library stands in for go-nvml's nvml.Interface, which needs cgo.
type Library interface{}

var errNoCgo = errors.New("no NVIDIA GPU found: built without cgo")

// Source is never constructed without cgo.
type Source struct{}

var _ gpu.Source = (*Source)(nil)

// New always fails: go-nvml cannot be linked without cgo.
func New(Options) (*Source, error) { return nil, errNoCgo }

// Name is "nvml".
func (*Source) Name() string { return "nvml" }

// Snapshot fails like New.
func (*Source) Snapshot(context.Context) (*gpu.NodeSnapshot, error) { return nil, errNoCgo }

// Close has nothing to release.
func (*Source) Close() error { return nil }
