package agent

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/gpuheal/gpuheal/internal/agent/kubecore"
	"github.com/gpuheal/gpuheal/internal/agent/predictor"
	"github.com/gpuheal/gpuheal/internal/gpu"
	"github.com/gpuheal/gpuheal/internal/gpureset"
	"github.com/gpuheal/gpuheal/internal/kmsg"
	"github.com/gpuheal/gpuheal/internal/podresources"
)

// Deps are what Run works with besides its options. They are passed in,
// not found, so that tests hand Run fakes and a sim fleet hands each of
// its agents a simulated backend and the fleet's shared client and model;
// NewDeps makes them from the options for a real agent.
type Deps struct {
	// Source is the GPU backend; Run closes it.
	Source gpu.Source
	// Open opens the backend again after Run released it for a GPU
	// Operator driver upgrade; nil keeps Source open through upgrades.
	Open func() (gpu.Source, error)
	// Kube is the core/v1 client for the agent's own Node; nil runs
	// without Kubernetes (--standalone).
	Kube rest.Interface
	// Model is the failure model; nil turns the predictor off.
	Model *predictor.Model
	// Clock stamps conditions and Events and times the analyzer's rules;
	// nil is the real clock.
	Clock clock.Clock
	// BootID is the host's boot ID (/proc/sys/kernel/random/boot_id) that
	// the checks report carries, so that the health gate never takes a
	// report from before a reboot; "" is unknown. NewDeps reads it under
	// Options.HostRoot, except for the sim backend, whose node is not the
	// host (a sim fleet sets each simulated node's own).
	BootID string
	// GPUReset is the GPU tool single-GPU resets run with; nil picks it
	// from the backend (the sim node, else nvidia-smi; gpureset.go).
	GPUReset gpureset.Device
	// PodResources answers which pods hold which GPUs (the kubelet's
	// pod-resources socket; a sim fleet's device manager); nil reports
	// every faulty GPU's pods as unknown.
	PodResources podresources.Lister
	// PublishMetrics, when set, receives the metrics handler instead of
	// Run listening on Options.MetricsAddress (a sim fleet serves every
	// node's metrics itself).
	PublishMetrics func(http.Handler)
}

// NewDeps opens what the options name: the failure model first, so that a
// bad model file stops the agent before it touches a GPU, then (inside a
// cluster) the API client, then the GPU backend. A backend that cannot be
// opened on a node that should have GPUs is retried in the background
// (retryIfGPUsKnown). One snapshot (Once) needs no model: the predictor
// belongs to the long-running agent.
func NewDeps(o *Options) (Deps, error) {
	d := Deps{Clock: clock.RealClock{}}
	if !o.Once {
		m, err := predictor.Load(o.Predictor)
		if err != nil {
			return Deps{}, err
		}
		d.Model = m
	}
	var err error
	if !o.Standalone {
		if d.Kube, err = kubecore.NewClient(o.Kubeconfig, 0); err != nil {
			return Deps{}, err
		}
	}
	src, err := openSource(o)
	if errors.Is(err, ErrNoGPU) && !o.Once {
		src, err = retryIfGPUsKnown(o, d.Kube, d.Clock, err)
	}
	if err != nil {
		return Deps{}, err
	}
	d.Source = src
	if o.PodResourcesSocket != "" {
		d.PodResources = podresources.NewClient(o.PodResourcesSocket, 0)
	}
	d.Open = func() (gpu.Source, error) { return openSource(o) }
	if o.Backend != BackendSim {
		// Unreadable (no procfs): "" and the controller goes by the
		// report's time alone.
		d.BootID, _ = kmsg.ReadBootID(filepath.Join(o.HostRoot, kmsg.DefaultBootIDPath))
	}
	return d, nil
}

// nodeReadTimeout bounds reading the agent's Node when deciding whether a
// backend that failed to open means "no GPU here" or "a broken driver".
const nodeReadTimeout = 30 * time.Second

// retryIfGPUsKnown turns a backend that found no GPU into one that keeps
// trying (retryingSource) when the node should have GPUs: --expected-gpus,
// or what the cluster says of the Node (knownGPUNode). Otherwise the
// agent exits with openErr, as on a node without GPUs. A Node that cannot
// be read leaves openErr too, with the reason: the agent then restarts
// and asks again.
func retryIfGPUsKnown(o *Options, kube rest.Interface, clk clock.Clock, openErr error) (gpu.Source, error) {
	why := ""
	switch {
	case o.ExpectedGPUs > 0:
		why = "--expected-gpus"
	case kube != nil:
		ctx, cancel := context.WithTimeout(context.Background(), nodeReadTimeout)
		defer cancel()
		n, err := kubecore.GetNode(ctx, kube, o.NodeName)
		if err != nil {
			return nil, fmt.Errorf("%w (and whether the node should have GPUs is unknown: %w)", openErr, err)
		}
		if known, key := knownGPUNode(n); known {
			why = "node " + n.Name + " " + key
		}
	}
	if why == "" {
		return nil, openErr
	}
	return newRetryingSource(o.Backend, why, openErr, func() (gpu.Source, error) { return openSource(o) }, clk), nil
}
