//go:build integration

package agent

import (
	"context"
	"testing"
	"time"

	"github.com/gpuheal/gpuheal/internal/agent/kubecore"
	"github.com/gpuheal/gpuheal/internal/testenv"
	"github.com/gpuheal/gpuheal/internal/testenv/testcluster"
)

// The agent's light core/v1 REST client against the real API server: the
// expected GPU count comes from the node's label.
func TestReadExpectedGPUsFromAPIServer(t *testing.T) {
	env := testcluster.Start(t, testenv.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := testenv.CreateGPUNodes(ctx, env.Client, "agent", 1); err != nil {
		t.Fatal(err)
	}
	c, err := kubecore.NewClient(env.Kubeconfig, 0)
	if err != nil {
		t.Fatal(err)
	}
	n, err := readExpectedGPUs(ctx, c, testenv.NodeName("agent", 0))
	if err != nil || n != 8 {
		t.Fatalf("expected GPUs = %d, %v; want 8", n, err)
	}
	if _, err := readExpectedGPUs(ctx, c, "no-such-node"); err == nil {
		t.Fatal("reading a missing node succeeded")
	}
}
