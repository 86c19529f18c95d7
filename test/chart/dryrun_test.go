//go:build integration

package chart

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/gpuheal/gpuheal/internal/testenv"
	"github.com/gpuheal/gpuheal/internal/testenv/testcluster"
	"github.com/gpuheal/gpuheal/internal/testproc"
)

// promOperatorModule holds the ServiceMonitor and PrometheusRule CRDs; its
// version is pinned in hack/tools/helm/go.mod.
const promOperatorModule = "github.com/prometheus-operator/prometheus-operator"

// TestServerSideDryRun applies every object of every value set to a real
// kube-apiserver (v1.37) with server-side apply and dryRun=All, so the API
// server's own validation — schemas, CEL rules of our CRDs, defaulting,
// ValidatingAdmissionPolicy compilation, pod-spec validation — judges what
// the chart renders. Our CRDs and prometheus-operator's are installed
// first, and the namespace is created for real.
func TestServerSideDryRun(t *testing.T) {
	// Skip (or fail under CI) before starting a control plane.
	helmBin(t)
	// Installs our CRDs from charts/gpuheal/crds.
	env := testcluster.Start(t, testenv.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	monitoring := true
	if dir, err := promOperatorCRDs(t); err != nil {
		if testproc.InCI() {
			t.Fatalf("prometheus-operator CRDs: %v", err)
		}
		t.Logf("prometheus-operator CRDs unavailable (%v): ServiceMonitor and PrometheusRule are not applied", err)
		monitoring = false
	} else if _, err := envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{Paths: []string{
		filepath.Join(dir, "monitoring.coreos.com_servicemonitors.yaml"),
		filepath.Join(dir, "monitoring.coreos.com_prometheusrules.yaml"),
	}, ErrorIfPathMissing: true}); err != nil {
		t.Fatalf("installing prometheus-operator CRDs: %v", err)
	}
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil {
		t.Fatal(err)
	}

	for _, vs := range valueSets {
		t.Run(vs.name, func(t *testing.T) {
			objs := decode(t, render(t, vs.args...))
			if len(objs) == 0 {
				t.Fatal("nothing rendered")
			}
			for _, o := range objs {
				what := fmt.Sprintf("%s %s", o.GetKind(), o.GetName())
				if strings.HasPrefix(o.GetAPIVersion(), "monitoring.coreos.com/") && !monitoring {
					t.Logf("%s: not applied (no CRD)", what)
					continue
				}
				if ns := o.GetNamespace(); ns != "" && ns != namespace {
					t.Errorf("%s is in namespace %q, not the release's", what, ns)
				}
				err := env.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(o),
					client.DryRunAll, client.ForceOwnership, client.FieldOwner("helm"))
				if err != nil {
					t.Errorf("%s: server-side dry run: %v", what, err)
				}
			}
		})
	}
}

// TestInstallNotesAndLookups installs the chart with a server-side dry run
// against a real API server, so the chart's lookups see a cluster: NOTES.txt
// counts the GPU nodes the agent's affinity matches and names the other
// remediators it finds, and the RuntimeClass is asked for only where one
// exists (agent.runtimeClass=auto).
func TestInstallNotesAndLookups(t *testing.T) {
	helmBin(t)
	env := testcluster.Start(t, testenv.Options{})
	ctx := t.Context()
	for _, n := range []*corev1.Node{
		{ObjectMeta: metav1.ObjectMeta{Name: "gpu-operator-node", Labels: map[string]string{"nvidia.com/gpu.present": "true"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "p5-node", Labels: map[string]string{"node.kubernetes.io/instance-type": "p5.48xlarge"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "cpu-node", Labels: map[string]string{"node.kubernetes.io/instance-type": "m7i.large"}}},
	} {
		if err := env.Client.Create(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	karpenter := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "karpenter", Namespace: "kube-system"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "karpenter"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "karpenter"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "controller", Image: "karpenter"}}},
			},
		},
	}
	if err := env.Client.Create(ctx, karpenter); err != nil {
		t.Fatal(err)
	}
	install := func(t *testing.T, args ...string) string {
		t.Helper()
		all := append([]string{"install", "gpuheal", chartDir(t), "--namespace", namespace, "--create-namespace",
			"--dry-run=server", "--kubeconfig", env.Kubeconfig}, args...)
		out, err := runHelm(t, all...)
		if err != nil {
			t.Fatalf("helm %s: %v", strings.Join(all, " "), err)
		}
		return out
	}

	out := install(t)
	for _, want := range []string{"matches 2 of 3 nodes", "Karpenter (Deployment kube-system/karpenter)"} {
		if !strings.Contains(out, want) {
			t.Errorf("NOTES lack %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "runtimeClassName:") {
		t.Error("the agent asks for RuntimeClass nvidia, which the cluster does not have")
	}

	rc := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "nvidia"}, Handler: "nvidia"}
	if err := env.Client.Create(ctx, rc); err != nil {
		t.Fatal(err)
	}
	if out := install(t); !strings.Contains(out, "runtimeClassName: nvidia") {
		t.Error("the cluster has RuntimeClass nvidia and the agent does not ask for it")
	}

	out = install(t, "-f", "testdata/other-agent-detects.yaml")
	if !strings.Contains(out, "No agent (agent.enabled=false)") || strings.Contains(out, "get ds gpuheal-agent") {
		t.Errorf("NOTES with agent.enabled=false still speak of the agent:\n%s", out)
	}
}

// promOperatorCRDs is the prometheus-operator module's CRD directory in the
// module cache (hack/build-helm.sh downloads it; go mod download is a
// no-op once it is there).
func promOperatorCRDs(t *testing.T) (string, error) {
	cmd := exec.Command("go", "mod", "download", "-json", promOperatorModule)
	cmd.Dir = filepath.Join(testcluster.RepoRoot(t), "hack", "tools", "helm")
	out, err := cmd.Output()
	var mod struct{ Dir, Error string }
	if jerr := json.Unmarshal(out, &mod); jerr != nil || mod.Dir == "" {
		return "", fmt.Errorf("go mod download %s: %w %s", promOperatorModule, err, mod.Error)
	}
	return filepath.Join(mod.Dir, "example", "prometheus-operator-crd"), nil
}
