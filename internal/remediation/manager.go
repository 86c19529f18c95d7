// Package remediation is the controller's wiring: the controller-runtime
// manager with leader election and probes, and (as they land) the
// reconcilers that turn unhealthy nodes into NodeRemediations.
package remediation

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
)

// DefaultNodeSelector selects GPU nodes, as NVIDIA's feature discovery and
// EKS label them; the controller caches and watches only these.
const DefaultNodeSelector = v1alpha1.LabelNvidiaGPUPresent + "=true"

// ManagerOptions configures the controller process.
type ManagerOptions struct {
	Kubeconfig              string
	MetricsAddress          string
	HealthAddress           string
	LeaderElection          bool
	LeaderElectionNamespace string
	LeaderElectionID        string
	GracefulShutdown        time.Duration
	// QPS and Burst limit the controller's API requests (defaults 100 and
	// 200: client-go's 5/10 would queue a burst of incidents for seconds).
	QPS   float32
	Burst int
	// NodeSelector restricts the nodes watched (default DefaultNodeSelector).
	NodeSelector string
	// RestConfig, when set, is used instead of Kubeconfig (tests).
	RestConfig *rest.Config
	// WrapClient, when set, wraps the manager's client (tests inject API
	// errors with controller-runtime's interceptor).
	WrapClient func(client.WithWatch) client.Client
	// ExtraHandlers are served beside /metrics, behind the same TLS and
	// authentication, and no other port is opened.
	ExtraHandlers map[string]http.Handler
	// SecureMetrics serves /metrics and the extra handlers over TLS, only to
	// callers the API server authenticates (TokenReview) and authorizes
	// (SubjectAccessReview of the request path as a nonResourceURL).
	SecureMetrics bool
	// MetricsCertDir holds tls.crt and tls.key (reloaded when they change);
	// empty means a self-signed certificate made at start.
	MetricsCertDir string
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
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = opts.QPS, opts.Burst
	if cfg.QPS <= 0 {
		cfg.QPS = 100
	}
	if cfg.Burst <= 0 {
		cfg.Burst = 200
	}
	if opts.NodeSelector == "" {
		opts.NodeSelector = DefaultNodeSelector
	}
	nodeSel, err := labels.Parse(opts.NodeSelector)
	if err != nil {
		return nil, fmt.Errorf("--node-selector %q: %w", opts.NodeSelector, err)
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: scheme,
		// Only GPU nodes are cached; pods are never cached (a drain lists
		// one node's pods from the API server).
		Cache: cache.Options{
			ByObject: map[client.Object]cache.ByObject{&corev1.Node{}: {Label: nodeSel}},
			// managedFields are a third of a Node object and we never read them.
			DefaultTransform: cache.TransformStripManagedFields(),
		},
		NewClient: func(cfg *rest.Config, o client.Options) (client.Client, error) {
			if opts.WrapClient == nil {
				return client.New(cfg, o)
			}
			c, err := client.NewWithWatch(cfg, o)
			if err != nil {
				return nil, err
			}
			return opts.WrapClient(c), nil
		},
		Metrics:                       metricsOptions(opts),
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

func metricsOptions(opts ManagerOptions) metricsserver.Options {
	m := metricsserver.Options{BindAddress: opts.MetricsAddress, ExtraHandlers: opts.ExtraHandlers}
	if opts.SecureMetrics {
		m.SecureServing = true
		m.CertDir = opts.MetricsCertDir
		m.FilterProvider = authFilter
		// HTTP/2 stays off: its rapid-reset and stream floods
		// (CVE-2023-44487) reach a server before any authentication.
		m.TLSOpts = []func(*tls.Config){func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }}
	}
	return m
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
