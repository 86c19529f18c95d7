package agent

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"k8s.io/client-go/rest"

	"github.com/gpuheal/gpuheal/internal/agent/kubecore"
)

// watchExpectedGPUs reads the node's expected GPU count (expectedFromNode)
// now and then, so a GPU that vanished from the driver shows as "found <
// expected". It runs only without --expected-gpus: a count the operator
// gave wins over what the cluster says.
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
	count, _, err := expectedFromNode(n)
	return count, err
}
