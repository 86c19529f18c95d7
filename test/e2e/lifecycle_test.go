//go:build integration

package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/testenv"
	"github.com/gpuheal/gpuheal/internal/testenv/testcluster"
	"github.com/gpuheal/gpuheal/internal/testproc"
)

// lifecycleRules: two fatal finding rules that clear 4 s after their last
// line, so one test can see damping, a second problem, and recovery.
const lifecycleRules = `rules:
- name: dbe
  scope: finding
  expr: finding.xid == 48
  severity: fatal
  condition: AcceleratedHardwareReady
  reason: NvidiaXID48Error
  message: "GPU {{.GPU.PCIBusID}}: double-bit ECC"
  action: reset-gpu
  clearAfter: 4s
- name: nvlink
  scope: finding
  expr: finding.xid == 74
  severity: fatal
  condition: AcceleratedHardwareReady
  reason: NvidiaXID74Error
  message: "GPU {{.GPU.PCIBusID}}: NVLink error"
  action: replace
  clearAfter: 4s
`

// TestConditionLifecycleOnNode drives the agent with kernel-log lines and
// watches the Node on the real API server:
//   - flap damping: Xid 48 again within clearAfter keeps the condition
//     False without a flip;
//   - a second, heavier problem while False switches reason and message
//     but keeps lastTransitionTime;
//   - recovery: clearAfter after the last line, the condition is True.
func TestConditionLifecycleOnNode(t *testing.T) {
	t.Parallel()
	env := testcluster.Start(t, testenv.Options{Kwok: true})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	names, err := testenv.CreateGPUNodes(ctx, env.Client, "lifecycle", 1)
	if err != nil {
		t.Fatal(err)
	}
	node := names[0]
	dir := t.TempDir()
	rules, kernelLog := filepath.Join(dir, "rules.yaml"), filepath.Join(dir, "kmsg")
	writeFile(t, rules, lifecycleRules)
	writeFile(t, kernelLog, "")

	// Record every state the condition goes through.
	cs := kubernetes.NewForConfigOrDie(env.Config)
	w, err := cs.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", node).String()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	states := make(chan corev1.NodeCondition, 256)
	go func() {
		for ev := range w.ResultChan() {
			if n, ok := ev.Object.(*corev1.Node); ok {
				for _, c := range n.Status.Conditions {
					if c.Type == v1alpha1.ConditionGPUHealAcceleratorHealthy {
						states <- c
					}
				}
			}
		}
	}()
	next := func(match func(corev1.NodeCondition) bool, what string) corev1.NodeCondition {
		t.Helper()
		for {
			select {
			case c := <-states:
				if match(c) {
					return c
				}
			case <-ctx.Done():
				t.Fatalf("never saw %s", what)
			}
		}
	}

	startClusterAgent(t, node, env.Kubeconfig, kernelLog, filepath.Join(dir, "state"), "--config="+rules)
	next(func(c corev1.NodeCondition) bool { return c.Status == corev1.ConditionTrue }, "True at start")

	xid := func(seq, code int) string {
		return fmt.Sprintf("4,%d,%d,-;NVRM: Xid (PCI:0000:18:00): %d, pid=1, name=python, trial", seq, seq*1000000, code)
	}
	appendLines(t, kernelLog, xid(1, 48))
	first := next(func(c corev1.NodeCondition) bool { return c.Status == corev1.ConditionFalse }, "False after Xid 48")
	if first.Reason != "NvidiaXID48Error" {
		t.Fatalf("reason %q", first.Reason)
	}

	// Within clearAfter: the same problem again, then a heavier one.
	appendLines(t, kernelLog, xid(2, 48))
	// 2 s < clearAfter: no True may appear.
	testproc.Consistently(t, 2*time.Second, "the condition not True within clearAfter", func() bool {
		for {
			select {
			case c := <-states:
				if c.Status == corev1.ConditionTrue {
					return false
				}
			default:
				return true
			}
		}
	})
	appendLines(t, kernelLog, xid(3, 74))
	second := next(func(c corev1.NodeCondition) bool { return c.Reason == "NvidiaXID74Error" }, "reason NvidiaXID74Error")
	if second.Status != corev1.ConditionFalse || !second.LastTransitionTime.Equal(&first.LastTransitionTime) {
		t.Fatalf("second problem: status %s, lastTransitionTime %v (first %v): must stay False with the same time",
			second.Status, second.LastTransitionTime, first.LastTransitionTime)
	}

	// Recovery once clearAfter has passed since the last line.
	healthy := next(func(c corev1.NodeCondition) bool { return c.Status == corev1.ConditionTrue }, "True after recovery")
	if !healthy.LastTransitionTime.After(first.LastTransitionTime.Time) {
		t.Errorf("recovery lastTransitionTime %v not after %v", healthy.LastTransitionTime, first.LastTransitionTime)
	}
}
