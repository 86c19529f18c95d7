//go:build integration

package chart

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/gpuheal/gpuheal/internal/testenv/testcluster"
	"github.com/gpuheal/gpuheal/internal/testproc"
)

// valueSet is one way to install the chart; the files live in testdata/.
type valueSet struct {
	name string
	args []string
	// kernelLog is the agent.kernelLog.access these values select.
	kernelLog string
	// driverRoot is the agent.driverRoot they set ("": the toolkit's).
	driverRoot string
}

// valueSets are rendered, linted and applied (server-side dry run) by the
// tests. Each one turns on a different part of the chart.
var valueSets = []valueSet{
	{name: "defaults", kernelLog: "syslog"},
	{name: "aws-dynamodb", args: []string{"-f", "testdata/aws-dynamodb.yaml"}, kernelLog: "syslog"},
	{name: "monitoring", args: []string{"-f", "testdata/monitoring.yaml"}, kernelLog: "syslog"},
	// The one broad mode, only when asked for.
	{name: "kmsg-privileged", args: []string{"--set", "agent.kernelLog.access=privileged"}, kernelLog: "privileged"},
	{name: "rules-override", args: []string{"-f", "testdata/rules-override.yaml"}, kernelLog: "devicePlugin"},
	// The shipped copy of the built-in rules, as docs/install.md tells
	// operators to start their own; no kernel log at all.
	{name: "rules-default-file", args: []string{"--set-file", "agent.rules=../../charts/gpuheal/files/default-rules.yaml",
		"--set", "agent.kernelLog.access=none"}, kernelLog: "none"},
	{name: "single-replica", args: []string{"-f", "testdata/single-replica.yaml"}, kernelLog: "file"},
	// Driver-root mode on both install paths: the GPU Operator's driver
	// container, and the EKS accelerated AMI's library directory.
	{name: "driver-root-gpu-operator", args: []string{"--set", "agent.driverRoot=/run/nvidia/driver"}, kernelLog: "syslog",
		driverRoot: "/run/nvidia/driver"},
	{name: "driver-root-eks-ami", args: []string{"--set", "agent.driverRoot=/usr/lib64"}, kernelLog: "syslog", driverRoot: "/usr/lib64"},
	// What hack/render-deploy.sh renders into deploy/.
	{name: "plain-manifests", args: []string{"--set", "helmLabels=false", "--set", "namespace.create=true", "--set", "uninstallHook.enabled=false"}, kernelLog: "syslog"},
}

// namespace is where the tests install the release.
const namespace = "gpuheal"

func chartDir(t *testing.T) string {
	return filepath.Join(testcluster.RepoRoot(t), "charts", "gpuheal")
}

// helmBin is bin/helm (or $GPUHEAL_BIN_DIR/helm), built by
// hack/build-helm.sh. Without it the test fails under CI and skips
// elsewhere.
func helmBin(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("GPUHEAL_BIN_DIR")
	if dir == "" {
		dir = filepath.Join(testcluster.RepoRoot(t), "bin")
	}
	path := filepath.Join(dir, "helm")
	if _, err := os.Stat(path); err != nil {
		msg := "helm not found at " + path + "; build it with hack/build-helm.sh"
		if testproc.InCI() {
			t.Fatal(msg)
		}
		t.Skip("skipping: " + msg)
	}
	return path
}

// runHelm runs helm with its cache, config and data under a temporary
// directory, so a test never reads or writes the user's helm setup.
func runHelm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(helmBin(t), args...)
	home := t.TempDir()
	cmd.Env = append(os.Environ(),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"),
	)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		return stdout.String(), errors.New(strings.TrimSpace(stderr.String() + "\n" + err.Error()))
	}
	return stdout.String(), nil
}

// render runs helm template for the release "gpuheal" in namespace gpuheal.
func render(t *testing.T, args ...string) string {
	t.Helper()
	all := append([]string{"template", "gpuheal", chartDir(t), "--namespace", namespace}, args...)
	out, err := runHelm(t, all...)
	if err != nil {
		t.Fatalf("helm %s: %v", strings.Join(all, " "), err)
	}
	return out
}

// decode splits rendered YAML into objects, skipping empty documents.
// Numbers decode as unstructured's own (int64, float64), as from the API.
func decode(t *testing.T, manifest string) []*unstructured.Unstructured {
	t.Helper()
	r := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(manifest)))
	var objs []*unstructured.Unstructured
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs
		}
		if err != nil {
			t.Fatalf("reading rendered manifest: %v", err)
		}
		js, err := yaml.YAMLToJSON(doc)
		if err != nil {
			t.Fatalf("rendered YAML: %v\n%s", err, doc)
		}
		if string(js) == "null" {
			continue
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(js); err != nil {
			t.Fatalf("rendered object: %v\n%s", err, doc)
		}
		objs = append(objs, u)
	}
}

// find returns the one object of that kind and name, failing the test
// when it is missing.
func find(t *testing.T, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	t.Fatalf("no %s %s in the rendered chart", kind, name)
	return nil
}

func has(objs []*unstructured.Unstructured, kind, name string) bool {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return true
		}
	}
	return false
}
