//go:build integration

package chart

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// The default node affinity, rendered for each install path, matches that
// path's GPU nodes and no CPU node, as the scheduler reads it (the
// scheduler's own node-affinity code evaluates the rendered DaemonSet).
// Node labels are what each install writes: GPU feature discovery
// (nvidia.com/gpu.present), EKS managed node groups on the accelerated AMI
// (only the kubelet's well-known labels and eks.amazonaws.com/nodegroup),
// Karpenter's AWS provider (karpenter.k8s.aws/instance-gpu-count), EKS Auto
// Mode (eks.amazonaws.com/instance-gpu-count).
func TestInstallPathsSelectGPUNodes(t *testing.T) {
	linux := map[string]string{"kubernetes.io/os": "linux"}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range linux {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	operatorNode := with("nvidia.com/gpu.present", "true", "nvidia.com/gpu.count", "8", "node.kubernetes.io/instance-type", "Standard_ND96isr_H100_v5")
	amiNode := with("node.kubernetes.io/instance-type", "p5.48xlarge", "eks.amazonaws.com/nodegroup", "gpu", "eks.amazonaws.com/nodegroup-image", "ami-0123")
	karpenterNode := with("node.kubernetes.io/instance-type", "p5en.48xlarge", "karpenter.sh/nodepool", "gpu", "karpenter.k8s.aws/instance-gpu-count", "8")
	autoModeNode := with("node.kubernetes.io/instance-type", "p6-b200.48xlarge", "eks.amazonaws.com/instance-gpu-count", "8")
	cpuNodes := []map[string]string{
		with("node.kubernetes.io/instance-type", "m7i.4xlarge", "eks.amazonaws.com/nodegroup", "system"),
		with("node.kubernetes.io/instance-type", "m7i.4xlarge", "karpenter.k8s.aws/instance-gpu-count", "0"),
		with("nvidia.com/gpu.present", "false"),
	}
	for _, tc := range []struct {
		name, values string
		gpu          []map[string]string
		runtimeClass bool
	}{
		{"GPU Operator", "testdata/gpu-operator.yaml", []map[string]string{operatorNode}, true},
		{"EKS accelerated AMI", "testdata/eks-ami.yaml", []map[string]string{amiNode, karpenterNode, autoModeNode}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ds := find(t, decode(t, render(t, "-f", tc.values)), "DaemonSet", "gpuheal-agent")
			var pod corev1.PodTemplateSpec
			tmpl, _, err := unstructured.NestedMap(ds.Object, "spec", "template")
			if err != nil {
				t.Fatal(err)
			}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(tmpl, &pod); err != nil {
				t.Fatal(err)
			}
			req := nodeaffinity.GetRequiredNodeAffinity(&corev1.Pod{Spec: pod.Spec})
			matches := func(labels map[string]string) bool {
				ok, err := req.Match(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: labels}})
				if err != nil {
					t.Fatal(err)
				}
				return ok
			}
			for _, n := range tc.gpu {
				if !matches(n) {
					t.Errorf("the agent would not run on GPU node %v", n)
				}
			}
			for _, n := range cpuNodes {
				if matches(n) {
					t.Errorf("the agent would run on CPU node %v", n)
				}
			}
			if got := pod.Spec.RuntimeClassName != nil; got != tc.runtimeClass {
				t.Errorf("runtimeClassName set = %v, want %v", got, tc.runtimeClass)
			}
		})
	}
}
