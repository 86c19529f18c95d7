package main

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/gpuheal/gpuheal/internal/flagenv"
	"github.com/gpuheal/gpuheal/internal/logging"
	"github.com/gpuheal/gpuheal/internal/remediation"
)

type options struct {
	log     logging.Options
	manager remediation.ManagerOptions
}

// parseOptions reads flags, then GPUHEAL_* variables for flags not given,
// and validates the result once.
func parseOptions(args []string) (*options, error) {
	o := &options{}
	fs := pflag.NewFlagSet("gpuheal-controller", pflag.ContinueOnError)
	fs.StringVar(&o.log.Format, "log-format", "json", "log format: json or text")
	fs.StringVar(&o.log.Level, "log-level", "info", "log level: debug, info, warn or error")
	fs.StringVar(&o.manager.Kubeconfig, "kubeconfig", "", "kubeconfig path (default: in-cluster, then $KUBECONFIG)")
	fs.StringVar(&o.manager.MetricsAddress, "metrics-address", ":8080", "address of the Prometheus metrics endpoint")
	fs.StringVar(&o.manager.HealthAddress, "health-address", ":8081", "address of /healthz and /readyz")
	fs.BoolVar(&o.manager.LeaderElection, "leader-elect", true, "elect a leader through a Lease so that only one replica acts")
	fs.StringVar(&o.manager.LeaderElectionNamespace, "leader-election-namespace", "", "namespace of the leader Lease (default: the pod's namespace)")
	fs.StringVar(&o.manager.LeaderElectionID, "leader-election-id", "gpuheal-controller", "name of the leader Lease")
	fs.DurationVar(&o.manager.GracefulShutdown, "graceful-shutdown-timeout", 30*time.Second, "how long running steps may take to finish on shutdown")
	flagenv.Usage(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if err := flagenv.Apply(fs, nil); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if _, err := logging.ParseLevel(o.log.Level); err != nil {
		return nil, err
	}
	if o.manager.GracefulShutdown <= 0 {
		return nil, fmt.Errorf("--graceful-shutdown-timeout %v: must be positive", o.manager.GracefulShutdown)
	}
	return o, nil
}
