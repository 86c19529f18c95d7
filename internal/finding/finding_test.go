package finding

import (
	"strings"
	"testing"
)

func TestOrderAndParse(t *testing.T) {
	order := []Severity{Info, Unknown, Warning, Fatal}
	for i := 1; i < len(order); i++ {
		if order[i].Rank() <= order[i-1].Rank() {
			t.Errorf("%s does not rank above %s", order[i], order[i-1])
		}
	}
	acts := []Action{ActionNone, ActionRestartApp, ActionResetGPU, ActionReboot, ActionReplace}
	for i, a := range acts {
		if a.Rank() != i {
			t.Errorf("%s rank %d, want %d", a, a.Rank(), i)
		}
		if got, err := ParseAction(string(a)); got != a || err != nil {
			t.Errorf("ParseAction(%q) = %q, %v", a, got, err)
		}
	}
	if _, err := ParseAction("reinstall"); err == nil || !strings.Contains(err.Error(), `"reinstall"`) {
		t.Errorf("ParseAction(reinstall) err = %v", err)
	}
	if _, err := ParseSeverity("critical"); err == nil || !strings.Contains(err.Error(), `"critical"`) {
		t.Errorf("ParseSeverity(critical) err = %v", err)
	}
}
