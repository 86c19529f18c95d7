//go:build integration

package chart

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/gpuheal/gpuheal/internal/testenv/testcluster"
)

func TestLint(t *testing.T) {
	for _, strict := range []bool{false, true} {
		args := []string{"lint", chartDir(t)}
		if strict {
			args = append(args, "--strict")
		}
		if out, err := runHelm(t, args...); err != nil {
			t.Errorf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	for _, vs := range valueSets {
		args := append([]string{"lint", chartDir(t), "--strict", "--namespace", namespace}, vs.args...)
		if out, err := runHelm(t, args...); err != nil {
			t.Errorf("%s: helm lint: %v\n%s", vs.name, err, out)
		}
	}
}

// TestInvalidValues: combinations that cannot work are refused at render
// time with a message that says what to change.
// values.schema.json names the key of a value of the wrong kind; the
// chart's own checks name the values that do not go together.
func TestInvalidValues(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"sqlite volume with two replicas", []string{"--set", "controller.replicas=2"},
			"needs controller.replicas=1"},
		{"dynamodb without a table", []string{"--set", "controller.audit.sink=dynamodb"},
			"needs controller.audit.dynamodb.table"},
		{"unknown sink", []string{"--set", "controller.audit.sink=s3"}, "'/controller/audit/sink': value must be one of"},
		{"unknown provider", []string{"--set", "controller.providers={gcp}"}, "'/controller/providers/0': value must be one of"},
		{"kernel log access", []string{"--set", "agent.kernelLog.access=hostPath"}, "'/agent/kernelLog/access': value must be one of"},
		{"rules without rules:", []string{"--set", "agent.rules=expectedDriverVersion: 1.2.3"}, "agent.rules needs a rules: list"},
		{"rules not YAML", []string{"--set-string", "agent.rules=rules: [unclosed"}, "agent.rules is not YAML"},
		{"no replicas", []string{"--set", "controller.replicas=0"}, "'/controller/replicas': minimum"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"template", "gpuheal", chartDir(t), "--namespace", namespace}, tc.args...)
			_, err := runHelm(t, args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("helm template %v: error %v, want one containing %q", tc.args, err, tc.want)
			}
		})
	}
}

func TestDefaultPolicyIsDryRun(t *testing.T) {
	objs := decode(t, render(t))
	p := find(t, objs, "RemediationPolicy", "default")
	dry, found, err := unstructured.NestedBool(p.Object, "spec", "dryRun")
	if err != nil || !found || !dry {
		t.Fatalf("default RemediationPolicy spec.dryRun = %v (found %v, %v), want true: remediation must be switched on by the operator", dry, found, err)
	}
	// And the operator's switch works.
	objs = decode(t, render(t, "--set", "remediationPolicy.spec.dryRun=false"))
	p = find(t, objs, "RemediationPolicy", "default")
	if dry, _, _ := unstructured.NestedBool(p.Object, "spec", "dryRun"); dry {
		t.Fatal("--set remediationPolicy.spec.dryRun=false left the policy in dry run")
	}
}

// TestControllerHA: leader election and a PodDisruptionBudget with two
// replicas; no PDB for one (minAvailable 1 would block every drain).
func TestControllerHA(t *testing.T) {
	objs := decode(t, render(t, "-f", "testdata/aws-dynamodb.yaml", "--set", "controller.replicas=2"))
	d := find(t, objs, "Deployment", "gpuheal-controller")
	if n, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas"); n != 2 {
		t.Errorf("replicas = %d, want 2", n)
	}
	if args := containerArgs(t, d, "controller"); !slices.Contains(args, "--leader-elect=true") {
		t.Errorf("controller args %v lack --leader-elect=true", args)
	}
	pdb := find(t, objs, "PodDisruptionBudget", "gpuheal-controller")
	if v, _, _ := unstructured.NestedFieldNoCopy(pdb.Object, "spec", "minAvailable"); v != int64(1) {
		t.Errorf("PDB minAvailable = %v, want 1", v)
	}
	single := decode(t, render(t, "-f", "testdata/single-replica.yaml"))
	if has(single, "PodDisruptionBudget", "gpuheal-controller") {
		t.Error("a single replica got a PodDisruptionBudget")
	}
}

// TestProviderRBAC: provider-specific rights follow controller.providers.
func TestProviderRBAC(t *testing.T) {
	groups := func(objs []*unstructured.Unstructured) string {
		role := find(t, objs, "ClusterRole", "gpuheal-controller")
		rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
		var gs []string
		for _, r := range rules {
			g, _, _ := unstructured.NestedStringSlice(r.(map[string]any), "apiGroups")
			gs = append(gs, g...)
		}
		return strings.Join(gs, ",")
	}
	def := decode(t, render(t))
	if g := groups(def); !strings.Contains(g, "karpenter.sh") || !strings.Contains(g, "cluster.x-k8s.io") {
		t.Errorf("default providers: role groups %s, want karpenter.sh and cluster.x-k8s.io", g)
	}
	if has(def, "ClusterRoleBinding", "gpuheal-controller-kwok") {
		t.Error("the kwok role is bound without the kwok provider")
	}
	aws := decode(t, render(t, "-f", "testdata/aws-dynamodb.yaml"))
	if g := groups(aws); strings.Contains(g, "karpenter.sh") || strings.Contains(g, "cluster.x-k8s.io") {
		t.Errorf("aws only: role groups %s, want neither karpenter.sh nor cluster.x-k8s.io", g)
	}
	kwok := decode(t, render(t, "-f", "testdata/single-replica.yaml"))
	find(t, kwok, "ClusterRoleBinding", "gpuheal-controller-kwok")
}

// TestMonitoringOffByDefault: prometheus-operator kinds need CRDs a cluster
// may not have.
func TestMonitoringOffByDefault(t *testing.T) {
	for _, o := range decode(t, render(t)) {
		if strings.HasPrefix(o.GetAPIVersion(), "monitoring.coreos.com/") {
			t.Errorf("default render has %s %s", o.GetKind(), o.GetName())
		}
	}
}

func containerArgs(t *testing.T, o *unstructured.Unstructured, name string) []string {
	t.Helper()
	c := container(t, o, name)
	args, _, _ := unstructured.NestedStringSlice(c, "args")
	return args
}

func container(t *testing.T, o *unstructured.Unstructured, name string) map[string]any {
	t.Helper()
	cs, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
	for _, c := range cs {
		m := c.(map[string]any)
		if m["name"] == name {
			return m
		}
	}
	t.Fatalf("%s %s has no container %s", o.GetKind(), o.GetName(), name)
	return nil
}

// TestMonitoringContent: the PrometheusRule carries dashboards/alerts.yaml
// and the dashboard ConfigMap dashboards/gpuheal-fleet.json, unchanged.
func TestMonitoringContent(t *testing.T) {
	root := testcluster.RepoRoot(t)
	objs := decode(t, render(t, "-f", "testdata/monitoring.yaml"))

	rule := find(t, objs, "PrometheusRule", "gpuheal")
	src, err := os.ReadFile(filepath.Join(root, "dashboards", "alerts.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Groups any `json:"groups"`
	}
	if err := yaml.Unmarshal(src, &file); err != nil {
		t.Fatal(err)
	}
	groups, _, _ := unstructured.NestedFieldNoCopy(rule.Object, "spec", "groups")
	if diff := cmp.Diff(normalize(t, file.Groups), normalize(t, groups)); diff != "" {
		t.Errorf("PrometheusRule groups differ from dashboards/alerts.yaml (-file +rule):\n%s", diff)
	}

	cm := find(t, objs, "ConfigMap", "gpuheal-dashboard")
	if l := cm.GetLabels()["grafana_dashboard"]; l != "1" {
		t.Errorf("dashboard ConfigMap label grafana_dashboard=%q, want 1", l)
	}
	dash, err := os.ReadFile(filepath.Join(root, "dashboards", "gpuheal-fleet.json"))
	if err != nil {
		t.Fatal(err)
	}
	got, _, _ := unstructured.NestedString(cm.Object, "data", "gpuheal-fleet.json")
	if got != strings.TrimRight(string(dash), "\n") {
		t.Error("the dashboard ConfigMap differs from dashboards/gpuheal-fleet.json")
	}
}

// normalize gives YAML- and API-decoded values one form (JSON's).
func normalize(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}
