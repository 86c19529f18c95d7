//go:build integration

package kwok

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuheal/gpuheal/internal/testenv"
	"github.com/gpuheal/gpuheal/internal/testproc"
)

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// startBooter runs a Booter until the test ends, or until the returned
// stop is called (a controller going away).
func startBooter(t *testing.T, c client.Client, opts Options) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- NewBooter(c, opts).Start(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Booter.Start returned %v", err)
		}
	}
	t.Cleanup(stop)
	return stop
}

// readyGPUNode creates one kwok GPU node and waits for kwok to make it Ready.
func readyGPUNode(t *testing.T, c client.Client, prefix string) *corev1.Node {
	t.Helper()
	ctx := testCtx(t)
	names, err := testenv.CreateGPUNodes(ctx, c, prefix, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := testenv.WaitNodesReady(ctx, c, names); err != nil {
		t.Fatal(err)
	}
	return getNode(t, c, names[0])
}

func getNode(t *testing.T, c client.Client, name string) *corev1.Node {
	t.Helper()
	var n corev1.Node
	if err := c.Get(testCtx(t), client.ObjectKey{Name: name}, &n); err != nil {
		t.Fatalf("reading node %s: %v", name, err)
	}
	return &n
}

// waitNode polls node name until ok holds, failing after a deadline with
// what was wanted and the node's last state.
func waitNode(t *testing.T, c client.Client, name, want string, ok func(*corev1.Node) bool) *corev1.Node {
	t.Helper()
	var last corev1.Node
	testproc.Eventually(t, 45*time.Second, "node "+name+": "+want, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKey{Name: name}, &last); err != nil {
			return false, err
		}
		if !ok(&last) {
			return false, fmt.Errorf("labels %v, annotations %v, conditions %+v", last.Labels, last.Annotations, last.Status.Conditions)
		}
		return true, nil
	})
	return &last
}

// setAgentCondition writes a condition the way the agent does.
func setAgentCondition(t *testing.T, c client.Client, node *corev1.Node, typ corev1.NodeConditionType, status corev1.ConditionStatus, reason string) {
	t.Helper()
	err := setConditions(testCtx(t), c, time.Now(), node, corev1.NodeCondition{Type: typ, Status: status, Reason: reason})
	if err != nil {
		t.Fatal(err)
	}
}
