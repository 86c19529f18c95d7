//go:build integration

package chart

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gpuheal/gpuheal/internal/testenv/testcluster"
)

const regenerate = "run hack/render-deploy.sh"

// TestDeployUpToDate: deploy/ is exactly what hack/render-deploy.sh renders
// from the chart now, file for file and byte for byte.
func TestDeployUpToDate(t *testing.T) {
	root := testcluster.RepoRoot(t)
	helm := helmBin(t)
	out := t.TempDir()
	cmd := exec.Command(filepath.Join(root, "hack", "render-deploy.sh"), out)
	cmd.Env = append(os.Environ(), "GPUHEAL_BIN_DIR="+filepath.Dir(helm),
		"HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hack/render-deploy.sh: %v\n%s", err, b)
	}
	want := yamlFiles(t, out)
	got := yamlFiles(t, filepath.Join(root, "deploy"))
	for _, f := range want {
		w, _ := os.ReadFile(filepath.Join(out, f))
		g, err := os.ReadFile(filepath.Join(root, "deploy", f))
		if err != nil {
			t.Errorf("deploy/%s is missing: %s", f, regenerate)
			continue
		}
		if !bytes.Equal(w, g) {
			t.Errorf("deploy/%s differs from the chart's rendering: %s", f, regenerate)
		}
	}
	for _, f := range got {
		if !slices.Contains(want, f) {
			t.Errorf("deploy/%s is not rendered from the chart (stale?): %s", f, regenerate)
		}
	}
}

// TestChartFilesUpToDate: the copies the chart ships of files kept
// elsewhere (Helm reads only files inside the chart) equal their sources.
func TestChartFilesUpToDate(t *testing.T) {
	root := testcluster.RepoRoot(t)
	for src, dst := range map[string]string{
		"dashboards/alerts.yaml":               "charts/gpuheal/files/alerts.yaml",
		"dashboards/gpuheal-fleet.json":        "charts/gpuheal/files/gpuheal-fleet.json",
		"internal/analyzer/default-rules.yaml": "charts/gpuheal/files/default-rules.yaml",
	} {
		s, serr := os.ReadFile(filepath.Join(root, src))
		d, derr := os.ReadFile(filepath.Join(root, dst))
		switch {
		case serr != nil && derr == nil:
			t.Errorf("%s exists but its source %s does not: %s", dst, src, regenerate)
		case serr != nil:
			t.Logf("%s does not exist (yet): nothing to copy", src)
		case derr != nil:
			t.Errorf("%s is missing (a copy of %s): %s", dst, src, regenerate)
		case !bytes.Equal(s, d):
			t.Errorf("%s differs from %s: %s", dst, src, regenerate)
		}
	}
}

func yamlFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, len(m))
	for i, p := range m {
		names[i] = filepath.Base(p)
	}
	return names
}
