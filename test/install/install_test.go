//go:build integration

package install

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/testproc"
)

const (
	release   = "gpuheal"
	namespace = "gpuheal"
	// The chart's names for the release above.
	agentName      = "gpuheal-agent"
	controllerName = "gpuheal-controller"
	gpuCondition   = v1alpha1.ConditionGPUHealAcceleratorHealthy
	unhealthyTaint = v1alpha1.TaintUnhealthy
	healthyGPUs    = v1alpha1.LabelGPUHealthyCount
)

// TestInstallOnRealKubelet is the whole life of an install on a real node:
// install, a fault and its repair up to the drain, an upgrade to another
// value set, and an uninstall that leaves nothing behind.
func TestInstallOnRealKubelet(t *testing.T) {
	c := startCluster(t)
	imagesStart := time.Now()
	for _, tar := range buildImages(t, c.root) {
		c.script(t, "import", tar)
	}
	t.Logf("images built and imported in %v", time.Since(imagesStart).Round(time.Millisecond))
	driverRoot := stubDriverRoot(t, c)
	kernelLog := filepath.Join(c.dir, "kernel-log", "kern.log")
	if err := os.WriteFile(kernelLog, nil, 0o644); err != nil {
		t.Fatal(err)
	}

	installStart := time.Now()
	c.helm(t, "install", release, "charts/gpuheal", "-n", namespace, "--create-namespace",
		"-f", "test/install/testdata/real-node.yaml",
		"--set", "agent.driverRoot="+driverRoot, "--set", "agent.kernelLog.file="+kernelLog,
		// The agent keeps the fatal findings of this boot across restarts;
		// a state directory of the test's own keeps runs apart.
		"--set", "agent.stateDir="+filepath.Join(c.dir, "agent-state"),
		// The one-node cluster's kubelet runs with --root-dir under c.dir.
		"--set", "agent.podResourcesDir="+filepath.Join(c.dir, "kubelet", "pod-resources"))
	node := c.waitHealthy(t, "8", 3*time.Minute)
	t.Logf("install to the agent's first condition: %v (%s=%s)", time.Since(installStart).Round(time.Millisecond),
		healthyGPUs, node.Labels[healthyGPUs])
	c.waitRollout(t)

	t.Run("agent token is bound to its node", func(t *testing.T) { c.checkOwnNodeOnly(t) })
	t.Run("fault cordons and drains through the Eviction API", func(t *testing.T) { c.checkFaultRepair(t, kernelLog) })
	t.Run("upgrade to the sim backend", func(t *testing.T) {
		c.helm(t, "upgrade", release, "charts/gpuheal", "-n", namespace, "--reuse-values",
			"-f", "test/install/testdata/sim-backend.yaml")
		c.waitAgentArgs(t, "--gpu-backend=sim")
	})
	t.Run("uninstall leaves nothing behind", func(t *testing.T) { c.checkUninstall(t) })
}

// waitHealthy waits until the agent has published the GPU condition True
// and the count of healthy GPUs, and returns the node.
func (c *cluster) waitHealthy(t *testing.T, gpus string, timeout time.Duration) *corev1.Node {
	t.Helper()
	var node *corev1.Node
	testproc.Eventually(t, timeout, fmt.Sprintf("node %s with %s True and %s=%s", c.node, gpuCondition, healthyGPUs, gpus),
		func(ctx context.Context) (bool, error) {
			n, err := c.cs.CoreV1().Nodes().Get(ctx, c.node, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			node = n
			cond := findCondition(n, gpuCondition)
			return cond != nil && cond.Status == corev1.ConditionTrue && n.Labels[healthyGPUs] == gpus, nil
		})

	return node
}

// waitRollout waits for the agent DaemonSet and the controller Deployment
// to be fully available: probes passing on the real kubelet.
func (c *cluster) waitRollout(t *testing.T) {
	t.Helper()
	testproc.Eventually(t, 3*time.Minute, "the agent DaemonSet and the controller Deployment ready", func(ctx context.Context) (bool, error) {
		ds, err := c.cs.AppsV1().DaemonSets(namespace).Get(ctx, agentName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		d, err := c.cs.AppsV1().Deployments(namespace).Get(ctx, controllerName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return ds.Status.NumberReady == 1 && ds.Status.UpdatedNumberScheduled == 1 &&
			d.Status.ReadyReplicas == 1 && d.Status.UpdatedReplicas == 1, nil
	})

}

// waitAgentArgs waits until the one agent pod that is Ready runs with arg.
func (c *cluster) waitAgentArgs(t *testing.T, arg string) {
	t.Helper()
	testproc.Eventually(t, 3*time.Minute, "an agent pod Ready with "+arg, func(ctx context.Context) (bool, error) {
		pods, err := c.cs.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + agentName})
		if err != nil {
			return false, err
		}
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil && podReady(&p) && strings.Contains(strings.Join(p.Spec.Containers[0].Args, " "), arg) {
				return true, nil
			}
		}
		return false, nil
	})

}

// checkFaultRepair runs a two-replica workload under a PodDisruptionBudget
// (minAvailable 1), writes an Xid 79 to the node's kernel log and expects
// the controller to cordon and taint the node, evict one pod through the
// Eviction API, and keep the other: the budget holds because the evicted
// pod's replacement cannot be scheduled on the cordoned node.
func (c *cluster) checkFaultRepair(t *testing.T, kernelLog string) {
	ctx := context.Background()
	labels := map[string]string{"app": "trainer"}
	two := int32(2)
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "trainer", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &two,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: new(int64(1)),
					Containers:                    []corev1.Container{{Name: "trainer", Image: pauseImage, ImagePullPolicy: corev1.PullNever}},
				},
			},
		},
	}
	if _, err := c.cs.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	one := intstr.FromInt32(1)
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "trainer", Namespace: "default"},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: labels}},
	}
	if _, err := c.cs.PolicyV1().PodDisruptionBudgets("default").Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var before []string
	testproc.Eventually(t, 2*time.Minute, "two trainer pods Running and the budget allowing one disruption", func(ctx context.Context) (bool, error) {
		names, err := c.runningPods(ctx, "default", "app=trainer")
		before = names
		if err != nil || len(names) != 2 {
			return false, err
		}
		p, err := c.cs.PolicyV1().PodDisruptionBudgets("default").Get(ctx, "trainer", metav1.GetOptions{})
		return err == nil && p.Status.DisruptionsAllowed == 1, err
	})

	faultAt := time.Now()
	line := fmt.Sprintf("%s %s kernel: NVRM: Xid (PCI:0000:1b:00): 79, pid=0, name=trainer, GPU has fallen off the bus.\n",
		time.Now().Format(time.Stamp), c.node)
	f, err := os.OpenFile(kernelLog, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(line); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	testproc.Eventually(t, 2*time.Minute, "the node cordoned and tainted "+unhealthyTaint, func(ctx context.Context) (bool, error) {
		n, err := c.cs.CoreV1().Nodes().Get(ctx, c.node, metav1.GetOptions{})
		return err == nil && n.Spec.Unschedulable && hasTaint(n, unhealthyTaint), err
	})

	t.Logf("fault to cordon: %v", time.Since(faultAt).Round(time.Millisecond))
	var evicted, kept string
	testproc.Eventually(t, 2*time.Minute, "one trainer pod evicted and the other kept by the budget", func(ctx context.Context) (bool, error) {
		running, err := c.runningPods(ctx, "default", "app=trainer")
		if err != nil {
			return false, err
		}
		var stayed []string
		for _, p := range before {
			if slices.Contains(running, p) {
				stayed = append(stayed, p)
			} else {
				evicted = p
			}
		}
		if len(stayed) != 1 {
			return false, nil
		}
		kept = stayed[0]
		return true, nil
	})

	// The controller's record: the pod went through the Eviction API, and
	// the API server refused the other one (the budget below says why).
	testproc.Eventually(t, time.Minute, "the incident recording the eviction of "+evicted+" and the refusal of "+kept,
		func(ctx context.Context) (bool, error) {
			nr, err := c.incident(ctx)
			if err != nil || nr == nil {
				return false, err
			}
			blocked := apimeta.FindStatusCondition(nr.Status.Conditions, v1alpha1.ConditionDrainBlocked)
			return slices.Equal(nr.Status.EvictedPods, []string{"default/" + evicted}) &&
				blocked != nil && blocked.Status == metav1.ConditionTrue && blocked.Reason == "EvictionRefused" &&
				strings.Contains(blocked.Message, "default/"+kept), nil
		})

	// The budget is what keeps the second pod: its disruptions allowed
	// fell to 0 and stays there while the replacement is Pending.
	p, err := c.cs.PolicyV1().PodDisruptionBudgets("default").Get(ctx, "trainer", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Status.DisruptionsAllowed != 0 || p.Status.CurrentHealthy != 1 {
		t.Errorf("budget after the drain: %d disruptions allowed, %d healthy; want 0 and 1",
			p.Status.DisruptionsAllowed, p.Status.CurrentHealthy)
	}
}

func (c *cluster) runningPods(ctx context.Context, ns, selector string) ([]string, error) {
	pods, err := c.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, err
	}
	var names []string
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && podReady(&p) {
			names = append(names, p.Name)
		}
	}
	return names, nil
}

func findCondition(n *corev1.Node, t string) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if string(n.Status.Conditions[i].Type) == t {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

func hasTaint(n *corev1.Node, key string) bool {
	for _, tt := range n.Spec.Taints {
		if tt.Key == key {
			return true
		}
	}
	return false
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// incident is the node's open NodeRemediation, nil when there is none.
func (c *cluster) incident(ctx context.Context) (*v1alpha1.NodeRemediation, error) {
	var list v1alpha1.NodeRemediationList
	if err := c.crc.List(ctx, &list); err != nil {
		return nil, err
	}
	for i := range list.Items {
		if nr := &list.Items[i]; nr.Spec.NodeName == c.node && !nr.Status.Phase.Terminal() {
			return nr, nil
		}
	}
	return nil, nil
}
