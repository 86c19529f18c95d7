//go:build integration

package chart

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gpuheal/gpuheal/internal/analyzer"
	"github.com/gpuheal/gpuheal/internal/flagenv"
	"github.com/gpuheal/gpuheal/internal/testenv/testcluster"
)

// TestRulesConfigMap: agent.rules reaches the agent as a file it loads,
// mounted as a directory (a subPath mount would never see an update, and
// the agent reloads the file when it changes); without agent.rules there
// is neither ConfigMap nor --config and the built-in rules apply.
func TestRulesConfigMap(t *testing.T) {
	for _, vs := range valueSets {
		if !strings.HasPrefix(vs.name, "rules-") {
			continue
		}
		t.Run(vs.name, func(t *testing.T) {
			objs := decode(t, render(t, vs.args...))
			cm := find(t, objs, "ConfigMap", "gpuheal-agent-rules")
			data, _, _ := unstructured.NestedString(cm.Object, "data", "rules.yaml")
			if _, err := analyzer.Load([]byte(data)); err != nil {
				t.Fatalf("the ConfigMap's rules do not load: %v", err)
			}
			ds := find(t, objs, "DaemonSet", "gpuheal-agent")
			if args := containerArgs(t, ds, "agent"); !strings.Contains(strings.Join(args, " "), "--config=/etc/gpuheal/rules.yaml") {
				t.Errorf("agent args %v lack --config=/etc/gpuheal/rules.yaml", args)
			}
			mounts, _, _ := unstructured.NestedSlice(container(t, ds, "agent"), "volumeMounts")
			found := false
			for _, m := range mounts {
				mm := m.(map[string]any)
				if mm["mountPath"] == "/etc/gpuheal" {
					found = true
					if _, sub := mm["subPath"]; sub {
						t.Error("the rules are mounted with subPath: updates would never reach the agent")
					}
				}
			}
			if !found {
				t.Error("nothing is mounted at /etc/gpuheal")
			}
		})
	}
	objs := decode(t, render(t))
	if has(objs, "ConfigMap", "gpuheal-agent-rules") {
		t.Error("defaults: a rules ConfigMap without agent.rules")
	}
	for _, a := range containerArgs(t, find(t, objs, "DaemonSet", "gpuheal-agent"), "agent") {
		if strings.HasPrefix(a, "--config") {
			t.Errorf("defaults: agent has %s; the built-in rules need none", a)
		}
	}
}

// flagRE finds flag names in a pflag FlagSet definition:
// fs.StringVar(&o.NodeName, "node-name", ...), fs.StringVarP(..., "output", "o", ...).
var flagRE = regexp.MustCompile(`fs\.[A-Za-z0-9]+\(&[^,]+,\s*"([a-z0-9-]+)"`)

func flagsOf(t *testing.T, binary string) map[string]bool {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(testcluster.RepoRoot(t), "cmd", binary, "options.go"))
	if err != nil {
		t.Fatal(err)
	}
	flags := map[string]bool{}
	for _, m := range flagRE.FindAllStringSubmatch(string(src), -1) {
		flags[m[1]] = true
	}
	if len(flags) < 10 {
		t.Fatalf("found only %d flags of %s; has cmd/%s/options.go changed form?", len(flags), binary, binary)
	}
	return flags
}

// TestFlagsExist: every flag and GPUHEAL_ variable the chart passes is one
// the binary defines (cmd/*/options.go), in every value set.
func TestFlagsExist(t *testing.T) {
	binaries := map[string]struct{ kind, name, container, binary string }{
		"agent":      {"DaemonSet", "gpuheal-agent", "agent", "gpuheal-agent"},
		"controller": {"Deployment", "gpuheal-controller", "controller", "gpuheal-controller"},
	}
	flags := map[string]map[string]bool{}
	for k, b := range binaries {
		flags[k] = flagsOf(t, b.binary)
	}
	for _, vs := range valueSets {
		objs := decode(t, render(t, vs.args...))
		for k, b := range binaries {
			o := find(t, objs, b.kind, b.name)
			for _, a := range containerArgs(t, o, b.container) {
				name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
				if !strings.HasPrefix(a, "--") || !flags[k][name] {
					t.Errorf("%s: %s argument %q is not a flag of %s", vs.name, k, a, b.binary)
				}
			}
			env, _, _ := unstructured.NestedSlice(container(t, o, b.container), "env")
			for _, e := range env {
				name := e.(map[string]any)["name"].(string)
				if !strings.HasPrefix(name, flagenv.Prefix) {
					continue
				}
				flag := strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(name, flagenv.Prefix)), "_", "-")
				if !flags[k][flag] || flagenv.VarName(flag) != name {
					t.Errorf("%s: %s variable %s mirrors no flag of %s", vs.name, k, name, b.binary)
				}
			}
		}
	}
}
