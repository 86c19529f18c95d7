//go:build integration

package chart

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
)

// TestCheckValues: the health gate's flags reach the controller (the
// nvbandwidth image and managedBy only when set), and its Role for check
// Jobs lands in the check namespace.
func TestCheckValues(t *testing.T) {
	objs := decode(t, render(t))
	args := containerArgs(t, find(t, objs, "Deployment", "gpuheal-controller"), "controller")
	for _, want := range []string{"--check-namespace=gpuheal", "--check-image-dcgm=nvcr.io/nvidia/cloud-native/dcgm:4.2.3-1-ubuntu22.04"} {
		if !slices.Contains(args, want) {
			t.Errorf("default controller args %v lack %s", args, want)
		}
	}
	for _, a := range args {
		if strings.HasPrefix(a, "--check-image-nvbandwidth") || strings.HasPrefix(a, "--check-jobs-managed-by") {
			t.Errorf("%q rendered without being set", a)
		}
	}
	if ns := find(t, objs, "Role", "gpuheal-controller-checks").GetNamespace(); ns != "gpuheal" {
		t.Errorf("checks Role in namespace %q, want the release's", ns)
	}
	objs = decode(t, render(t, "--set", "controller.checks.namespace=gpu-checks", "--set", "controller.checks.images.nvbandwidth=registry.example/nvbandwidth:v0.8",
		"--set", "controller.checks.jobsManagedBy=gpuheal.io/simfleet"))
	args = containerArgs(t, find(t, objs, "Deployment", "gpuheal-controller"), "controller")
	for _, want := range []string{"--check-namespace=gpu-checks", "--check-image-nvbandwidth=registry.example/nvbandwidth:v0.8", "--check-jobs-managed-by=gpuheal.io/simfleet"} {
		if !slices.Contains(args, want) {
			t.Errorf("controller args %v lack %s", args, want)
		}
	}
	for _, kind := range []string{"Role", "RoleBinding"} {
		if ns := find(t, objs, kind, "gpuheal-controller-checks").GetNamespace(); ns != "gpu-checks" {
			t.Errorf("checks %s in namespace %q, want gpu-checks", kind, ns)
		}
	}
}

// TestIdleCheckPriorityClass: the idle checks' PriorityClass is the one the
// controller names, below every workload's priority, and never preempts.
func TestIdleCheckPriorityClass(t *testing.T) {
	pc := find(t, decode(t, render(t)), "PriorityClass", v1alpha1.PriorityClassIdleCheck)
	value, _, _ := unstructured.NestedInt64(pc.Object, "value")
	policy, _, _ := unstructured.NestedString(pc.Object, "preemptionPolicy")
	global, _, _ := unstructured.NestedBool(pc.Object, "globalDefault")
	if value >= -10 || policy != "Never" || global {
		t.Errorf("PriorityClass %s: value %d, preemptionPolicy %q, globalDefault %v; want below -10, Never, false", pc.GetName(), value, policy, global)
	}
}
