package agent

import (
	"net/http"

	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/gpuheal/gpuheal/internal/agent/kubecore"
	"github.com/gpuheal/gpuheal/internal/agent/predictor"
	"github.com/gpuheal/gpuheal/internal/gpu"
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
	// PublishMetrics, when set, receives the metrics handler instead of
	// Run listening on Options.MetricsAddress (a sim fleet serves every
	// node's metrics itself).
	PublishMetrics func(http.Handler)
}

// NewDeps opens what the options name: the failure model first, so that a
// bad model file stops the agent before it touches a GPU, then the GPU
// backend, then (inside a cluster) the API client. One snapshot (Once)
// needs no model: the predictor belongs to the long-running agent.
func NewDeps(o *Options) (Deps, error) {
	d := Deps{Clock: clock.RealClock{}}
	if !o.Once {
		m, err := predictor.Load(o.Predictor)
		if err != nil {
			return Deps{}, err
		}
		d.Model = m
	}
	src, err := openSource(o)
	if err != nil {
		return Deps{}, err
	}
	d.Source = src
	d.Open = func() (gpu.Source, error) { return openSource(o) }
	if !o.Standalone {
		if d.Kube, err = kubecore.NewClient(o.Kubeconfig, 0); err != nil {
			_ = src.Close()
			return Deps{}, err
		}
	}
	return d, nil
}
