package agent

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
)

// watchExpectedGPUs reads the node's GPU-count label now and then, so a GPU
// that vanished from the driver shows as "found < expected".
func watchExpectedGPUs(ctx context.Context, cs rest.Interface, node string, expected *atomic.Int64, log *slog.Logger) {
	tick := time.NewTicker(time.Minute)
	defer tick.Stop()
	for {
		n, err := readExpectedGPUs(ctx, cs, node)
		switch {
		case err != nil:
			log.Warn("reading expected GPU count", "node", node, "err", err)
		case n > 0:
			expected.Store(int64(n))
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func readExpectedGPUs(ctx context.Context, c rest.Interface, node string) (int, error) {
	var n kubeNode
	if err := getInto(ctx, c.Get().Resource("nodes").Name(node), &n); err != nil {
		return 0, fmt.Errorf("getting node %s: %w", node, err)
	}
	return expectedFromNode(&n)
}

func expectedFromNode(n *kubeNode) (int, error) {
	v, ok := n.Labels[v1alpha1.LabelNvidiaGPUCount]
	if !ok {
		return 0, nil
	}
	c, err := strconv.Atoi(v)
	if err != nil || c < 0 {
		return 0, fmt.Errorf("node %s label %s=%q is not a GPU count", n.Name, v1alpha1.LabelNvidiaGPUCount, v)
	}
	return c, nil
}

// clientFor returns a REST client for core/v1. Not the typed clientset:
// that links and registers every API group of Kubernetes into the agent,
// which costs a DaemonSet on every node about 12 MiB of RSS
// (docs/benchmarks.md).
//
// qps above 0 raises client-go's default limit (5/s, burst 10), which one
// node's agent never reaches but a sim fleet of many agents sharing one
// client would.
func clientFor(kubeconfig string, qps float32) (rest.Interface, error) {
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
	cfg.APIPath = "/api"
	cfg.GroupVersion = &coreGroupVersion
	cfg.NegotiatedSerializer = serializer.NewCodecFactory(statusScheme).WithoutConversion()
	if cfg.UserAgent == "" {
		cfg.UserAgent = "gpuheal-agent"
	}
	return rest.RESTClientFor(cfg)
}
