package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

const twoContexts = `apiVersion: v1
kind: Config
clusters:
- name: a
  cluster: {server: https://a.example:6443}
- name: b
  cluster: {server: https://b.example:6443}
users:
- name: u
  user: {token: t}
contexts:
- name: ctx-a
  context: {cluster: a, user: u, namespace: team-a}
- name: ctx-b
  context: {cluster: b, user: u}
current-context: ctx-a
`

// The global flags are kubectl's: --kubeconfig, --context, --server, -n
// and the rest find the cluster as kubectl would.
func TestClusterFlags(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte(twoContexts), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args          []string
		wantHost      string
		wantNamespace string // for a command whose default is gpuheal
	}{
		{[]string{"--kubeconfig", path}, "https://a.example:6443", "gpuheal"},
		{[]string{"--kubeconfig", path, "--context", "ctx-b"}, "https://b.example:6443", "gpuheal"},
		{[]string{"--kubeconfig", path, "-s", "https://c.example", "-n", "ops"}, "https://c.example", "ops"},
		{[]string{"--kubeconfig=" + path, "--namespace=ops", "--request-timeout=5s", "--as=alice"}, "https://a.example:6443", "ops"},
	}
	for _, tt := range tests {
		k := newCluster()
		var got struct{ host, ns, user string }
		root := newRoot(strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{}, k)
		root.AddCommand(&cobra.Command{Use: "probe", RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := k.restConfig()
			if err != nil {
				return err
			}
			got.host, got.ns, got.user = cfg.Host, k.namespace(cmd, "gpuheal"), cfg.UserAgent
			return nil
		}})
		root.SetArgs(append([]string{"probe"}, tt.args...))
		if err := root.Execute(); err != nil {
			t.Fatalf("%v: %v", tt.args, err)
		}
		if got.host != tt.wantHost || got.ns != tt.wantNamespace || got.user != "gpuheal-cli" {
			t.Errorf("%v: host %q namespace %q user agent %q, want %q %q gpuheal-cli", tt.args, got.host, got.ns, got.user, tt.wantHost, tt.wantNamespace)
		}
	}
}

// Every command that lists things takes the same -o values, and a bad one
// is refused before anything is read, naming the flag and the values.
func TestOutputFlag(t *testing.T) {
	for _, args := range [][]string{
		{"status"}, {"score"}, {"incidents", "--audit-db", "none.db"}, {"diagnose", "--kmsg", "none.log"},
	} {
		out, code := runCLI(t, "", append(args, "-o", "csv")...)
		if code == 0 || !strings.Contains(out, `--output (-o) "csv": want one of table, wide, json, yaml`) {
			t.Errorf("%v -o csv: exit %d %q", args, code, out)
		}
	}
}
