package testenv_test

import (
	"context"
	"strings"
	"testing"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/testenv"
)

func TestGPUNodeIsStableAndWellFormed(t *testing.T) {
	a, b := testenv.GPUNode("gpu-0007"), testenv.GPUNode("gpu-0007")
	if a.Spec.ProviderID != b.Spec.ProviderID || a.Labels["topology.kubernetes.io/zone"] != b.Labels["topology.kubernetes.io/zone"] {
		t.Fatal("same name gave different nodes")
	}
	zone := a.Labels["topology.kubernetes.io/zone"]
	if !strings.HasPrefix(a.Spec.ProviderID, "aws:///"+zone+"/i-0") || len(a.Spec.ProviderID) != len("aws:///"+zone+"/i-0")+16 {
		t.Errorf("providerID %q does not match zone %s or instance id form", a.Spec.ProviderID, zone)
	}
	for k, v := range map[string]string{v1alpha1.LabelNvidiaGPUPresent: "true", v1alpha1.LabelNvidiaGPUCount: "8", v1alpha1.LabelNvidiaGPUProduct: "NVIDIA-H100-80GB-HBM3", "node.kubernetes.io/instance-type": "p5.48xlarge"} {
		if a.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, a.Labels[k], v)
		}
	}
	if a.Annotations[v1alpha1.AnnotationKwokManaged] != v1alpha1.KwokManagedValue {
		t.Error("node is not marked for kwok")
	}
}

func TestMissingBinariesNamesWhatAndHow(t *testing.T) {
	dir := t.TempDir()
	_, err := testenv.Start(context.Background(), testenv.Options{BinDir: dir, Kwok: true})
	if err == nil {
		t.Fatal("Start with an empty bin dir succeeded")
	}
	for _, want := range []string{dir, "kube-apiserver", "etcd", "kwok", "make controlplane"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}
