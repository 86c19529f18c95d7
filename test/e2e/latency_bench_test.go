//go:build integration

package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/testenv"
	"github.com/gpuheal/gpuheal/internal/testenv/testcluster"
)

// latencyRules has one fatal finding rule that clears quickly, so each
// trial can flip the condition False and wait for it to return True.
const latencyRules = `rules:
- name: xid-fatal-trial
  scope: finding
  expr: finding.xid == 48
  severity: fatal
  condition: AcceleratedHardwareReady
  reason: "NvidiaXID{{.Finding.Xid}}Error"
  message: "trial"
  action: reset-gpu
  clearAfter: 300ms
`

// BenchmarkXidToConditionFalse measures, over GPUHEAL_LATENCY_TRIALS
// trials (default 200), the time from an Xid line appearing in the kernel
// log the agent follows to GPUHealAcceleratorHealthy=False being readable
// from the real API server (seen through a watch). Lines are written at
// random moments so no timer of the agent lines up with them. The agent
// follows a file here, polled every 20 ms; on a node it blocks on
// /dev/kmsg, which adds no polling delay.
func BenchmarkXidToConditionFalse(b *testing.B) {
	trials := 200
	if v, err := strconv.Atoi(os.Getenv("GPUHEAL_LATENCY_TRIALS")); err == nil && v > 0 {
		trials = v
	}
	env := testcluster.Start(b, testenv.Options{Kwok: true})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	names, err := testenv.CreateGPUNodes(ctx, env.Client, "latency", 1)
	if err != nil {
		b.Fatal(err)
	}
	node := names[0]
	dir := b.TempDir()
	rules, kernelLog := filepath.Join(dir, "rules.yaml"), filepath.Join(dir, "kmsg")
	if err := os.WriteFile(rules, []byte(latencyRules), 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(kernelLog, nil, 0o644); err != nil {
		b.Fatal(err)
	}
	stop, _ := startClusterAgent(b, node, env.Kubeconfig, kernelLog, filepath.Join(dir, "state"),
		"--config="+rules, "--kmsg-poll-interval=20ms") // the later flag wins
	defer stop()

	cs := kubernetes.NewForConfigOrDie(env.Config)
	status := make(chan corev1.ConditionStatus, 16)
	go watchCondition(ctx, cs, node, status)
	awaitStatus(b, status, corev1.ConditionTrue)

	var lat []time.Duration
	for b.Loop() {
		lat = lat[:0]
		for i := range trials {
			time.Sleep(time.Duration(rand.Int64N(int64(200 * time.Millisecond)))) // a random moment, not a wait
			line := fmt.Sprintf("4,%d,%d,-;NVRM: Xid (PCI:0000:18:00): 48, pid=1, name=python, An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 0, subpartition 0.\n",
				100+i, (10+i)*1000000)
			start := time.Now()
			appendRaw(b, kernelLog, line)
			awaitStatus(b, status, corev1.ConditionFalse)
			lat = append(lat, time.Since(start))
			awaitStatus(b, status, corev1.ConditionTrue)
		}
	}
	slices.Sort(lat)
	q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))]) / float64(time.Millisecond) }
	b.ReportMetric(q(0.5), "p50-ms")
	b.ReportMetric(q(0.9), "p90-ms")
	b.ReportMetric(q(0.99), "p99-ms")
	b.ReportMetric(q(1), "max-ms")
	b.ReportMetric(float64(len(lat)), "trials")
}

func watchCondition(ctx context.Context, cs kubernetes.Interface, node string, out chan<- corev1.ConditionStatus) {
	for ctx.Err() == nil {
		w, err := cs.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", node).String()})
		if err != nil {
			continue
		}
		for ev := range w.ResultChan() {
			n, ok := ev.Object.(*corev1.Node)
			if !ok {
				continue
			}
			for _, c := range n.Status.Conditions {
				if c.Type == v1alpha1.ConditionGPUHealAcceleratorHealthy {
					out <- c.Status
				}
			}
		}
	}
}

func awaitStatus(b *testing.B, ch <-chan corev1.ConditionStatus, want corev1.ConditionStatus) {
	b.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case s := <-ch:
			if s == want {
				return
			}
		case <-timeout:
			b.Fatalf("GPUHealAcceleratorHealthy never became %s", want)
		}
	}
}

func appendRaw(b *testing.B, path, line string) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(line); err != nil {
		b.Fatal(err)
	}
}
