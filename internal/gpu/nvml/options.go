// Package nvml reads GPUs through NVML (github.com/NVIDIA/go-nvml), the
// library nvidia-smi is built on. It is the only package that imports
// go-nvml, which needs cgo; built without cgo, New reports that no GPU can
// be found so the agent falls back to another backend.
//
// Every NVML call is time-boxed: a failing GPU can block a call for
// seconds or forever, and one such GPU must not stall the others.
package nvml

import (
	"time"

	"k8s.io/utils/clock"
)

// Options configure a Source. The zero value is ready to use.
type Options struct {
	// Lib is the NVML library; nil means libnvidia-ml.so.1, found as
	// DriverRoot says. Tests pass go-nvml's mock servers.
	Lib Library
	// DriverRoot is where the NVIDIA driver's files are: "" or "/" leaves
	// the search for libnvidia-ml.so.1 to the system's dynamic loader
	// (LD_LIBRARY_PATH, ld.so.cache); any other directory is searched in
	// the usual library directories below it (FindLibrary), e.g. the GPU
	// Operator's driver container at /run/nvidia/driver.
	DriverRoot string
	// Clock stamps snapshots and events and times calls out.
	Clock clock.Clock
	// CallTimeout bounds one NVML call (default 2s).
	CallTimeout time.Duration
	// ReadTimeout bounds one GPU's whole read, so a GPU whose calls are
	// each slow but under CallTimeout cannot stretch a snapshot either
	// (default 2×CallTimeout).
	ReadTimeout time.Duration
	// InitTimeout bounds nvmlInit, which loads the driver state of every
	// GPU and is slow without persistence mode (default 60s).
	InitTimeout time.Duration
	// EventWait is how long one wait on the Xid event set blocks inside
	// the driver; it bounds how long Close waits (default 1s).
	EventWait time.Duration
	// ExpectedGPUs is copied into every snapshot; with it set, a node
	// where NVML sees no GPU still gets a Source reporting FoundGPUs 0
	// instead of an error.
	ExpectedGPUs int
}

const (
	defaultCallTimeout = 2 * time.Second
	defaultInitTimeout = 60 * time.Second
	defaultEventWait   = time.Second
)

func (o Options) withDefaults() Options {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = defaultCallTimeout
	}
	if o.ReadTimeout <= 0 {
		o.ReadTimeout = 2 * o.CallTimeout
	}
	if o.InitTimeout <= 0 {
		o.InitTimeout = defaultInitTimeout
	}
	if o.EventWait <= 0 {
		o.EventWait = defaultEventWait
	}
	return o
}
