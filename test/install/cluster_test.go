//go:build integration

package install

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/testenv"
	"github.com/gpuheal/gpuheal/internal/testproc"
)

// cluster is a running one-node cluster.
type cluster struct {
	root       string // the repository
	dir        string // its state: PKI, logs, the kubelet's root
	node       string
	kubeconfig string
	cfg        *rest.Config // the admin's
	cs         kubernetes.Interface
	crc        client.Client // with gpuheal's API types
}

// startCluster brings the one-node cluster up for the test and down after
// it; on failure it first prints every pod's log and the tail of each
// component's log.
func startCluster(t *testing.T) *cluster {
	t.Helper()
	if os.Geteuid() != 0 {
		if testproc.InCI() {
			t.Fatal("the install test needs root (a real kubelet); CI runs as root")
		}
		t.Skip("skipping: the install test needs root (a real kubelet)")
	}
	root, err := testenv.RepoRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{root: root, dir: filepath.Join(os.TempDir(), "gpuheal-install-test"), node: "gpu-node-0"}
	// A cluster left by a killed run holds the kubelet's cgroups and ports.
	c.script(t, "down")
	if err := os.RemoveAll(c.dir); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			c.dumpLogs(t)
		}
		c.script(t, "down")
	})
	start := time.Now()
	out := c.script(t, "up")
	c.kubeconfig = strings.TrimSpace(lastLine(out))
	t.Logf("one-node cluster up in %v", time.Since(start).Round(time.Millisecond))
	cfg, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
	if err != nil {
		t.Fatalf("kubeconfig from node-cluster.sh up (%q): %v", c.kubeconfig, err)
	}
	c.cfg = cfg
	if c.cs, err = kubernetes.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if c.crc, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		t.Fatal(err)
	}
	return c
}

// script runs hack/node-cluster.sh with this cluster's settings.
func (c *cluster) script(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(c.root, "hack", "node-cluster.sh"), args...)
	cmd.Env = append(os.Environ(), "GPUHEAL_NODE_CLUSTER_DIR="+c.dir, "GPUHEAL_NODE_NAME="+c.node)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node-cluster.sh %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// helm runs bin/helm against the cluster with its own cache and config.
func (c *cluster) helm(t *testing.T, args ...string) string {
	t.Helper()
	bin := filepath.Join(c.root, "bin", "helm")
	if d := os.Getenv("GPUHEAL_BIN_DIR"); d != "" {
		bin = filepath.Join(d, "helm")
	}
	home := filepath.Join(c.dir, "helm")
	cmd := exec.Command(bin, append(args, "--kubeconfig", c.kubeconfig)...)
	cmd.Dir = c.root
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+home+"/cache", "HELM_CONFIG_HOME="+home+"/config", "HELM_DATA_HOME="+home+"/data")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// dumpLogs prints what explains a failure: each pod's status and log (read
// through the API server from the real kubelet) and each component's tail.
func (c *cluster) dumpLogs(t *testing.T) {
	if c.cs == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pods, err := c.cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Logf("listing pods for their logs: %v", err)
	}
	for _, p := range pods.Items {
		t.Logf("pod %s/%s: phase %s, conditions %s", p.Namespace, p.Name, p.Status.Phase, podConditions(&p))
		for _, ctr := range p.Spec.Containers {
			b, err := c.cs.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{Container: ctr.Name, TailLines: new(int64(60))}).DoRaw(ctx)
			t.Logf("log of %s/%s[%s] (err %v):\n%s", p.Namespace, p.Name, ctr.Name, err, b)
		}
	}
	events, err := c.cs.CoreV1().Events("").List(ctx, metav1.ListOptions{})
	if err == nil {
		for _, e := range events.Items {
			t.Logf("event %s %s/%s %s: %s", e.Type, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message)
		}
	}
	for _, name := range []string{"kubelet", "containerd", "kube-apiserver", "kube-controller-manager", "kube-proxy"} {
		b, _ := os.ReadFile(filepath.Join(c.dir, "logs", name+".log"))
		t.Logf("tail of %s.log:\n%s", name, tail(b, 40))
	}
}

func podConditions(p *corev1.Pod) string {
	var parts []string
	for _, c := range p.Status.Conditions {
		parts = append(parts, fmt.Sprintf("%s=%s", c.Type, c.Status))
	}
	for _, s := range p.Status.ContainerStatuses {
		if w := s.State.Waiting; w != nil {
			parts = append(parts, fmt.Sprintf("%s waiting %s: %s", s.Name, w.Reason, w.Message))
		}
		if x := s.LastTerminationState.Terminated; x != nil {
			parts = append(parts, fmt.Sprintf("%s last exit %d %s", s.Name, x.ExitCode, x.Reason))
		}
	}
	return strings.Join(parts, ", ")
}

func tail(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func lastLine(s string) string { return tail([]byte(s), 1) }
