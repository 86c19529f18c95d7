package cli

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gpuhealv1 "github.com/gpuheal/gpuheal/api/v1alpha1"
)

// cluster is how commands reach the API server: kubectl's global flags
// find it (--kubeconfig, else $KUBECONFIG, else ~/.kube/config, else
// in-cluster; --context, --server, --token, -n, ...).
//
// The flags are those of cli-runtime's genericclioptions.ConfigFlags (less
// --cache-dir: nothing here caches discovery), bound from client-go's
// clientcmd, which ConfigFlags wraps. Importing cli-runtime itself would
// link kustomize and through it the standard library's plugin package,
// which is cgo: the operator's CLI stays free of cgo.
type cluster struct {
	kubeconfig string
	overrides  clientcmd.ConfigOverrides
	// connect makes the client; tests set one that returns a fake.
	connect func() (client.Client, error)
}

func newCluster() *cluster {
	k := &cluster{}
	k.connect = func() (client.Client, error) {
		cfg, err := k.restConfig()
		if err != nil {
			return nil, err
		}
		return newFleetClient(cfg)
	}
	return k
}

// addFlags adds kubectl's global cluster flags to fs.
func (k *cluster) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&k.kubeconfig, "kubeconfig", "", "Path to the kubeconfig file to use for CLI requests.")
	names := clientcmd.RecommendedConfigOverrideFlags("")
	names.ClusterOverrideFlags.APIServer.ShortName = "s" // as kubectl's
	clientcmd.BindOverrideFlags(&k.overrides, fs, names)
}

// restConfig is the flags' config with gpuheal's user agent.
func (k *cluster) restConfig() (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = k.kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &k.overrides).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading Kubernetes config: %w", err)
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = "gpuheal-cli"
	}
	return cfg, nil
}

// client is a controller-runtime client that knows Nodes and our CRDs.
func (k *cluster) client() (client.Client, error) { return k.connect() }

// namespace is -n when given, else def: gpuheal's controller lives in its
// own namespace, not in the kubeconfig context's.
func (k *cluster) namespace(cmd *cobra.Command, def string) string {
	if f := cmd.Flags().Lookup(clientcmd.FlagNamespace); f != nil && f.Changed {
		return k.overrides.Context.Namespace
	}
	return def
}

func newFleetClient(cfg *rest.Config) (client.Client, error) {
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := gpuhealv1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", cfg.Host, err)
	}
	return c, nil
}
