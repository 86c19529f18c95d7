//go:build integration

package e2e

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/procs"
	"github.com/gpuheal/gpuheal/internal/testenv"
	"github.com/gpuheal/gpuheal/internal/testenv/testcluster"
	"github.com/gpuheal/gpuheal/internal/testproc"
)

// TestDevClusterLifecycle builds the CLI, runs `gpuheal dev cluster`, uses
// the kubeconfig it prints, and checks that Ctrl-C stops every process.
func TestDevClusterLifecycle(t *testing.T) {
	t.Parallel()
	binDir := testcluster.RequireBinaries(t, true, false)
	gpuheal := buildBinary(t, "github.com/gpuheal/gpuheal/cmd/gpuheal", "gpuheal")

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out := &lineLog{match: func(l string) bool { return strings.HasPrefix(l, "kubeconfig: ") }, found: make(chan string, 1)}
	dev := testproc.StartCommand(t, procs.Command{Path: gpuheal, Args: []string{"dev", "cluster", "--nodes", "5",
		"--bin-dir", binDir, "--log-format", "json"}, Output: out, StopSignal: syscall.SIGINT})
	var kubeconfig string
	select {
	case line := <-out.found:
		kubeconfig = strings.TrimPrefix(line, "kubeconfig: ")
	case <-dev.Done():
		t.Fatalf("gpuheal dev cluster exited before printing its kubeconfig: %v", dev.Err())
	case <-ctx.Done():
		t.Fatal("no kubeconfig line within 3 minutes")
	}

	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatalf("kubeconfig %s: %v", kubeconfig, err)
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes, client.MatchingLabels{v1alpha1.LabelNvidiaGPUPresent: "true"}); err != nil {
		t.Fatal(err)
	}
	ready := 0
	for i := range nodes.Items {
		if testenv.NodeReady(&nodes.Items[i]) {
			ready++
		}
	}
	if len(nodes.Items) != 5 || ready != 5 {
		t.Fatalf("got %d GPU nodes, %d Ready; want 5 and 5", len(nodes.Items), ready)
	}

	children := testenv.ChildPIDs(dev.PID())
	if len(children) < 3 {
		t.Fatalf("expected etcd, kube-apiserver and kwok as children, got pids %v", children)
	}
	if err := dev.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-dev.Done():
		if err := dev.Err(); err != nil {
			t.Fatalf("gpuheal dev cluster exited with %v after SIGINT", err)
		}
	case <-ctx.Done():
		t.Fatal("gpuheal dev cluster did not stop after SIGINT")
	}
	for _, pid := range children {
		if _, err := os.Stat(filepath.Join("/proc", strconv.Itoa(pid))); err == nil {
			t.Errorf("child process %d still running after the CLI exited", pid)
		}
	}
	if _, err := os.Stat(kubeconfig); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temporary kubeconfig %s left behind (stat err %v)", kubeconfig, err)
	}
}
