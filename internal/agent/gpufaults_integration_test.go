//go:build integration

package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/agent/kubecore"
	"github.com/gpuheal/gpuheal/internal/gpu/sim"
	"github.com/gpuheal/gpuheal/internal/podresources"
	"github.com/gpuheal/gpuheal/internal/podresources/podresourcestest"
	"github.com/gpuheal/gpuheal/internal/testenv"
	"github.com/gpuheal/gpuheal/internal/testenv/testcluster"
	"github.com/gpuheal/gpuheal/internal/testproc"
)

// A sim node with a double-bit error on GPU 3, and a kubelet socket
// (the real PodResources v1 protocol) that has pods on GPUs 0, 3 and 5:
// the agent writes the gpu-faults annotation on its Node listing GPU 3
// alone, with its UUID, its bus ID and exactly its pod, and the Node never
// shows the unhealthy condition without it.
func TestAgentReportsThePodsOfAFaultyGPU(t *testing.T) {
	env := testcluster.Start(t, testenv.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	name := gpuNodeWith(ctx, t, env.Client, map[string]string{v1alpha1.LabelNvidiaGPUCount: "8"}, 8)
	kube, err := kubecore.NewClient(env.Kubeconfig, 0)
	if err != nil {
		t.Fatal(err)
	}
	src, err := sim.New(sim.Options{NodeName: name, GPUs: 8})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := src.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	uuids := src.UUIDs()
	kubelet := podresourcestest.Start(t)
	kubelet.SetPods(
		podresourcestest.Pod("ml", "train-0", "nvidia.com/gpu", uuids[0]),
		podresourcestest.Pod("ml", "train-3", "nvidia.com/gpu", uuids[3]),
		podresourcestest.Pod("web", "infer-5", "nvidia.com/gpu", uuids[5]+"::0"),
	)
	if err := src.Inject(sim.Fault{Kind: sim.KindDBE, GPU: 3}); err != nil {
		t.Fatal(err)
	}

	o := validOptions()
	o.Standalone, o.NodeName = false, name
	o.Interval, o.CallTimeout = time.Second, 500*time.Millisecond
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		d := Deps{Source: src, Kube: kube, PodResources: podresources.NewClient(kubelet.Socket, 0), PublishMetrics: func(http.Handler) {}}
		done <- Run(runCtx, &o, d, io.Discard, slog.New(slog.DiscardHandler))
	}()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()

	var report v1alpha1.GPUFaultReport
	testproc.Eventually(t, 30*time.Second, "the gpu-faults annotation on the Node", func(ctx context.Context) (bool, error) {
		var n corev1.Node
		if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, &n); err != nil {
			return false, err
		}
		v, has := n.Annotations[v1alpha1.AnnotationGPUFaults]
		for _, c := range n.Status.Conditions {
			if c.Type == v1alpha1.ConditionGPUHealAcceleratorHealthy && c.Status == corev1.ConditionFalse && !has {
				return false, fmt.Errorf("condition False (%s) without the gpu-faults annotation", c.Reason)
			}
		}
		if !has {
			return false, nil
		}
		return true, json.Unmarshal([]byte(v), &report)
	})
	bus := strings.ToUpper("0000" + snap.GPUs[3].PCIBusID) // nvidia-smi's 00000000:XX:00.0
	want := []v1alpha1.GPUFault{{
		GPURef: v1alpha1.GPURef{Index: 3, UUID: uuids[3], BusID: bus},
		Reason: report.GPUs[0].Reason, Action: "reset-gpu", Pods: []string{"ml/train-3"}, Sharing: v1alpha1.GPUSharingExclusive,
	}}
	if d := cmp.Diff(want, report.GPUs); d != "" {
		t.Errorf("gpu-faults (-want +got):\n%s", d)
	}
	if report.GPUs[0].Reason == "" || report.Time.IsZero() {
		t.Errorf("gpu-faults %+v: want the fault's reason and the report's time", report)
	}
}
