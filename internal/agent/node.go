package agent

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"k8s.io/client-go/rest"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/agent/kubecore"
	"github.com/gpuheal/gpuheal/internal/fabric"
)

// ownNodeFacts are what watchOwnNode keeps up to date: the expected GPU
// and RDMA device counts, and the driver gate (nil: no backend to release).
// rdmaFixed: --expected-rdma-devices was given, and the instance type's
// count does not replace it.
type ownNodeFacts struct {
	gpus, rdma *atomic.Int64
	rdmaFixed  bool
	gate       *driverGate
}

// watchOwnNode reads the agent's own Node, from the API server's watch
// cache (resourceVersion=0) so that a fleet's agents cost it little, and
// hands on what the agent follows of it: the expected GPU count
// (expectedFromNode), so that a GPU that vanished from the driver shows
// as "found < expected" — what the cluster knows of the node wins, and
// --expected-gpus, expected's first value, stays only while the Node
// names no count (docs/install.md, "The expected GPU count") — and the GPU
// Operator's driver-upgrade state (nil gate: no backend to release). It
// reads every slow, and every fast while an upgrade label is on the node
// or after a failed read, which keeps the last values.
func watchOwnNode(ctx context.Context, kube rest.Interface, node string, facts ownNodeFacts, fast, slow time.Duration, log *slog.Logger) {
	expected, gate := facts.gpus, facts.gate
	for {
		wait := slow
		var n kubecore.Node
		err := kubecore.Get(ctx, kube.Get().Resource("nodes").Name(node).Param("resourceVersion", "0"), &n)
		if err != nil {
			if ctx.Err() == nil {
				log.Warn("reading the agent's own node", "node", node, "err", err)
			}
			wait = fast
		} else {
			if expected != nil {
				count, _, err := expectedFromNode(&n)
				if err != nil {
					log.Warn("reading expected GPU count", "node", node, "err", err)
				}
				if count > 0 { // the other sources still count past a broken label
					expected.Store(int64(count))
				}
			}
			// The instance type's RDMA device count is the most it takes; an
			// operator who launched fewer EFA interfaces says so with the
			// flag, which then stays (a count too high would have every
			// such node replaced for devices it was never given).
			if rdma := rdmaFromNode(&n, facts.rdmaFixed); rdma > 0 && facts.rdma != nil {
				facts.rdma.Store(int64(rdma))
			}
			if gate != nil {
				state, ok := n.Labels[v1alpha1.LabelNvidiaDriverUpgradeState]
				if ok {
					wait = fast
				}
				gate.setState(state)
			}
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// rdmaFromNode is the RDMA device count the node's instance type names,
// or 0 when the flag fixed the count (or the type has no EFA).
func rdmaFromNode(n *kubecore.Node, fixed bool) int {
	if fixed {
		return 0
	}
	return fabric.ExpectedDevices(n.Labels[v1alpha1.LabelInstanceType])
}

func readExpectedGPUs(ctx context.Context, c rest.Interface, node string) (int, error) {
	n, err := kubecore.GetNode(ctx, c, node)
	if err != nil {
		return 0, err
	}
	count, _, err := expectedFromNode(n)
	return count, err
}
