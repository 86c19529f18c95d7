// Package remediation is the controller's wiring: the controller-runtime
// manager with leader election and probes, and (as they land) the
// reconcilers that turn unhealthy nodes into NodeRemediations.
package remediation

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// ManagerOptions configures the controller process.
type ManagerOptions struct {
	Kubeconfig              string
	MetricsAddress          string
	HealthAddress           string
	LeaderElection          bool
	LeaderElectionNamespace string
	LeaderElectionID        string
	GracefulShutdown        time.Duration
	// RestConfig, when set, is used instead of Kubeconfig (tests).
	RestConfig *rest.Config
}

// NewManager builds the manager: leader election on a Lease (released on
// shutdown so a standby takes over at once), /healthz and /readyz.
func NewManager(opts ManagerOptions) (manager.Manager, error) {
	cfg := opts.RestConfig
	if cfg == nil {
		var err error
		if cfg, err = loadConfig(opts.Kubeconfig); err != nil {
			return nil, err
		}
	}
	gs := opts.GracefulShutdown
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Metrics:                       metricsserver.Options{BindAddress: opts.MetricsAddress},
		HealthProbeBindAddress:        opts.HealthAddress,
		LeaderElection:                opts.LeaderElection,
		LeaderElectionID:              opts.LeaderElectionID,
		LeaderElectionNamespace:       opts.LeaderElectionNamespace,
		LeaderElectionReleaseOnCancel: true,
		GracefulShutdownTimeout:       &gs,
	})
	if err != nil {
		return nil, fmt.Errorf("creating controller manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	return mgr, nil
}

// Run starts the manager and blocks until ctx ends.
func Run(ctx context.Context, opts ManagerOptions) error {
	mgr, err := NewManager(opts)
	if err != nil {
		return err
	}
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("running controller manager: %w", err)
	}
	return nil
}

func loadConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("loading kubeconfig %s: %w", kubeconfig, err)
		}
		return cfg, nil
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return nil, fmt.Errorf("loading cluster config (in-cluster or $KUBECONFIG): %w", err)
	}
	return cfg, nil
}
