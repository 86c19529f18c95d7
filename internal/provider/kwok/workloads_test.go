//go:build integration

package kwok

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuheal/gpuheal/internal/testenv"
	"github.com/gpuheal/gpuheal/internal/testenv/testcluster"
)

// With the workload controllers running (the demo and the soak), a
// replacement boots to Ready and stays so: the node lifecycle controller
// must not take kwok's rare heartbeats for a lost node.
func TestReplacementBootsBesideWorkloadControllers(t *testing.T) {
	t.Parallel()
	env := testcluster.Start(t, testenv.Options{Kwok: true, Workloads: true})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	names, err := testenv.CreateGPUNodes(ctx, env.Client, "wl", 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := testenv.WaitNodesReady(ctx, env.Client, names); err != nil {
		t.Fatal(err)
	}
	opts := Options{BootDelay: 2 * time.Second}
	startBooter(t, env.Client, opts)
	var old corev1.Node
	if err := env.Client.Get(ctx, client.ObjectKey{Name: names[0]}, &old); err != nil {
		t.Fatal(err)
	}
	name, err := New(env.Client, opts).Replace(ctx, &old, "incident-1")
	if err != nil {
		t.Fatal(err)
	}
	if err := testenv.WaitNodesReady(ctx, env.Client, []string{ReplacementName(old.Name, "incident-1")}); err != nil {
		t.Fatalf("replacement %s never Ready: %v", name, err)
	}
}
