package cli

import (
	"strings"
	"testing"
)

// `gpuheal soak --month` runs the job model alone: the three arms' table,
// no cluster; a bad value is named.
func TestSoakMonthRunsTheModelAlone(t *testing.T) {
	out, code := runCLI(t, "", "soak", "--month", "--month-nodes", "32", "--month-days", "3", "--month-seeds", "2")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	for _, want := range []string{"32 nodes, 3 days, seeds 1-2", "manual", "gpuheal+feedback", "job interruptions per 1,000 GPU-hours"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	out, code = runCLI(t, "", "soak", "--month", "--month-seeds", "0")
	if code == 0 || !strings.Contains(out, "seeds 0") {
		t.Errorf("--month-seeds 0: exit %d, %s", code, out)
	}
	out, code = runCLI(t, "", "soak", "--month", "--compare")
	if code == 0 || !strings.Contains(out, "choose one") {
		t.Errorf("--month --compare: exit %d, %s", code, out)
	}
}
