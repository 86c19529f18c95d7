// Package e2e runs the gpuheal binaries as a user would.
package e2e

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuheal/gpuheal/internal/testenv"
)

// TestDevClusterLifecycle builds the CLI, runs `gpuheal dev cluster`, uses
// the kubeconfig it prints, and checks that Ctrl-C stops every process.
func TestDevClusterLifecycle(t *testing.T) {
	binDir := requireControlPlane(t)
	gpuheal := buildBinary(t, "github.com/gpuheal/gpuheal/cmd/gpuheal", "gpuheal")

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, gpuheal, "dev", "cluster", "--nodes", "5", "--bin-dir", binDir, "--log-format", "json")
	logPath := filepath.Join(t.TempDir(), "gpuheal.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd.Stderr = logFile
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("gpuheal dev cluster log:\n%s", b)
		}
	})
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill() }()

	kubeconfig := ""
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if path, ok := strings.CutPrefix(sc.Text(), "kubeconfig: "); ok {
			kubeconfig = path
			break
		}
	}
	if kubeconfig == "" {
		t.Fatalf("no kubeconfig line on stdout (scan error %v)", sc.Err())
	}
	go func() { // keep draining so the CLI never blocks on a full pipe
		for sc.Scan() {
		}
	}()

	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatalf("kubeconfig %s: %v", kubeconfig, err)
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes, client.MatchingLabels{testenv.GPUPresentLabel: "true"}); err != nil {
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

	children := testenv.ChildPIDs(cmd.Process.Pid)
	if len(children) < 3 {
		t.Fatalf("expected etcd, kube-apiserver and kwok as children, got pids %v", children)
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("gpuheal dev cluster exited with %v after SIGINT", err)
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

func requireControlPlane(t *testing.T) string {
	t.Helper()
	binDir, err := testenv.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	if missing := testenv.MissingBinaries(binDir, true, false); len(missing) > 0 {
		err := &testenv.MissingBinariesError{Dir: binDir, Missing: missing}
		if testenv.InCI() {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	return binDir
}
