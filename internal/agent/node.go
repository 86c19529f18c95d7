package agent

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"k8s.io/client-go/rest"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/agent/kubecore"
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
	n, err := kubecore.GetNode(ctx, c, node)
	if err != nil {
		return 0, err
	}
	return expectedFromNode(n)
}

func expectedFromNode(n *kubecore.Node) (int, error) {
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
