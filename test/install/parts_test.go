//go:build integration

package install

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/gpuheal/gpuheal/internal/testenv"
)

// pauseImage is the sandbox image hack/node-cluster.sh builds and imports;
// the test's workload runs it too, so it needs no other image.
const pauseImage = "registry.k8s.io/pause:3.10"

// buildImages runs `make images` as a person would and returns the image
// archives it saved for the node.
func buildImages(t *testing.T, root string) []string {
	t.Helper()
	cmd := exec.Command("make", "images")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make images: %v\n%s", err, tail(out, 60))
	}
	tars, err := filepath.Glob(filepath.Join(root, "bin", "images", "*-"+runtime.GOARCH+".tar"))
	if err != nil || len(tars) < 3 {
		t.Fatalf("make images left %d image archives in bin/images (err %v), want the agent's, the controller's and the CLI's", len(tars), err)
	}
	return tars
}

// stubDriverRoot builds the stand-in libnvidia-ml.so.1 (test/nvml/stub)
// into a driver tree on the host, laid out as a host driver install is, and
// returns the tree's root for agent.driverRoot.
func stubDriverRoot(t *testing.T, c *cluster) string {
	t.Helper()
	root := filepath.Join(c.dir, "driver")
	libDir := filepath.Join(root, "usr", "lib", map[string]string{"amd64": "x86_64-linux-gnu", "arm64": "aarch64-linux-gnu"}[runtime.GOARCH])
	if err := os.MkdirAll(libDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := testenv.BuildNVMLStub(c.root, filepath.Join(libDir, "libnvidia-ml.so.1")); err != nil {
		t.Fatal(err)
	}
	return root
}
