package agent

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/clientcmd"
)

// GPUCountLabel is set by NVIDIA's GPU feature discovery (and by us on
// fake nodes): the number of GPUs the node should have.
const GPUCountLabel = "nvidia.com/gpu.count"

// watchExpectedGPUs reads the node's GPU-count label now and then, so a GPU
// that vanished from the driver shows as "found < expected".
func watchExpectedGPUs(ctx context.Context, o *Options, expected *atomic.Int64, log *slog.Logger) {
	cs, err := clientFor(o.Kubeconfig)
	if err != nil {
		log.Warn("no Kubernetes client; expected GPU count unknown", "err", err)
		return
	}
	tick := time.NewTicker(time.Minute)
	defer tick.Stop()
	for {
		n, err := readExpectedGPUs(ctx, cs, o.NodeName)
		switch {
		case err != nil:
			log.Warn("reading expected GPU count", "node", o.NodeName, "err", err)
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

func readExpectedGPUs(ctx context.Context, cs corev1client.CoreV1Interface, node string) (int, error) {
	n, err := cs.Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return 0, fmt.Errorf("getting node %s: %w", node, err)
	}
	return expectedFromNode(n)
}

func expectedFromNode(n *corev1.Node) (int, error) {
	v, ok := n.Labels[GPUCountLabel]
	if !ok {
		return 0, nil
	}
	c, err := strconv.Atoi(v)
	if err != nil || c < 0 {
		return 0, fmt.Errorf("node %s label %s=%q is not a GPU count", n.Name, GPUCountLabel, v)
	}
	return c, nil
}

// clientFor returns a core/v1 client only: the full clientset links every
// API group into the agent, which costs it about 10 MiB of RSS.
func clientFor(kubeconfig string) (corev1client.CoreV1Interface, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading Kubernetes config: %w", err)
	}
	return corev1client.NewForConfig(cfg)
}
