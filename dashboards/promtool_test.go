package dashboards

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// promtool finds promtool on PATH. Without it the test fails under CI
// (CI=true, as testenv.InCI) and skips elsewhere.
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("promtool is not installed (%v); CI must provide it: Debian/Ubuntu package prometheus, or the promtool binary of a Prometheus release", err)
	}
	t.Skipf("promtool is not installed (%v); install the Debian/Ubuntu package prometheus to run this test (under CI=true it fails)", err)
	return ""
}

// runPromtool runs promtool with args and fails the test, with promtool's
// output, when it exits non-zero.
func runPromtool(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), promtool(t), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}
