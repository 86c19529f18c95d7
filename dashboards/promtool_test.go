//go:build integration

package dashboards

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/gpuheal/gpuheal/internal/testproc"
)

// promtool finds promtool on PATH. Without it the test fails under CI
// (testproc.InCI) and skips elsewhere.
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err == nil {
		return p
	}
	if testproc.InCI() {
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

func TestAlertRulesCheck(t *testing.T) {
	out := runPromtool(t, "check", "rules", "alerts.yaml")
	if !strings.Contains(out, "SUCCESS") {
		t.Errorf("promtool check rules: no SUCCESS in\n%s", out)
	}
}

func TestAlertRulesUnitTests(t *testing.T) {
	runPromtool(t, "test", "rules", "alerts_test.yaml")
}
