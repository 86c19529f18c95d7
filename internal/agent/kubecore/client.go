package kubecore

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// NewClient returns a REST client for core/v1 from a kubeconfig path ("":
// in-cluster, then $KUBECONFIG). Not the typed clientset: that links and
// registers every API group of Kubernetes into the agent, which costs a
// DaemonSet on every node about 12 MiB of RSS (docs/benchmarks.md).
//
// qps above 0 raises client-go's default limit (5/s, burst 10), which one
// node's agent never reaches but a sim fleet of many agents sharing one
// client would.
func NewClient(kubeconfig string, qps float32) (rest.Interface, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading Kubernetes config: %w", err)
	}
	// A partitioned API server drops packets rather than refusing them;
	// without a timeout a request would hang and the agent's state would
	// never be retried.
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Second
	}
	if qps > 0 {
		cfg.QPS, cfg.Burst = qps, int(2*qps)
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = "gpuheal-agent"
	}
	return ClientFor(cfg)
}

// ClientFor returns a core/v1 REST client for a connection config (tests
// build one for a fake API or a token of their own).
func ClientFor(cfg *rest.Config) (rest.Interface, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.APIPath = "/api"
	cfg.GroupVersion = &groupVersion
	cfg.NegotiatedSerializer = serializer.NewCodecFactory(statusScheme).WithoutConversion()
	c, err := rest.RESTClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("making the core/v1 client: %w", err)
	}
	return c, nil
}

// groupVersion is the core API, v1.
var groupVersion = schema.GroupVersion{Version: "v1"}

// statusScheme knows only metav1.Status, so that the REST client turns an
// error response into a typed error (IsAlreadyExists, IsForbidden).
var statusScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	metav1.AddToGroupVersion(s, groupVersion)
	return s
}()

// WatchClient is c for watches that outlast c's request timeout: the
// timeout of c's HTTP client (10s from NewClient) bounds a whole
// response, so it would cut every watch with an error. The copy shares
// c's transport (credentials, user agent) and rate limiter; the caller
// bounds each watch with a context and the server's timeoutSeconds. ok
// is false when c is not a client-go RESTClient and keeps its timeout.
func WatchClient(c rest.Interface) (_ rest.Interface, ok bool) {
	rc, isREST := c.(*rest.RESTClient)
	if !isREST || rc.Client == nil {
		return c, false
	}
	if rc.Client.Timeout == 0 {
		return c, true
	}
	hc := *rc.Client
	hc.Timeout = 0
	u := rc.Get().URL()
	base := &url.URL{Scheme: u.Scheme, Host: u.Host, Path: strings.TrimSuffix(u.Path, "/api/v1")}
	content := rest.ClientContentConfig{
		AcceptContentTypes: "application/json",
		ContentType:        "application/json",
		GroupVersion:       groupVersion,
		Negotiator:         runtime.NewClientNegotiator(serializer.NewCodecFactory(statusScheme).WithoutConversion(), groupVersion),
	}
	w, err := rest.NewRESTClient(base, "/api/v1", content, rc.GetRateLimiter(), &hc)
	if err != nil {
		return c, false
	}
	return w, true
}
