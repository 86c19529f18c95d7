package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gpuhealv1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/testenv"
)

// evil is what a compromised agent or a crafted kernel-log line could put
// in a message: retitle the window, clear the screen, hide text, return
// the cursor to overwrite the line.
const evil = "\x1b]0;owned\x07\x1b[2J\x1b[8mhidden\x1b[0m\r"

func assertTerminalSafe(t *testing.T, what, out string) {
	t.Helper()
	if strings.ContainsAny(out, "\x1b\x07\r") {
		t.Errorf("%s keeps control characters:\n%q", what, out)
	}
}

func TestDescribeIsTerminalSafe(t *testing.T) {
	now := time.Now()
	n := testenv.GPUNode("gpu-evil")
	n.Status.Conditions = []corev1.NodeCondition{{Type: gpuhealv1.ConditionGPUHealAcceleratorHealthy, Status: corev1.ConditionFalse,
		Reason: "Xid" + evil, Message: "GPU 3 " + evil + " fell off\nFAKE ROW", LastTransitionTime: metav1.NewTime(now)}}
	r := &gpuhealv1.NodeRemediation{
		ObjectMeta: metav1.ObjectMeta{Name: "gpu-evil-incident", CreationTimestamp: metav1.NewTime(now)},
		Spec: gpuhealv1.NodeRemediationSpec{NodeName: "gpu-evil", PolicyName: "default",
			Trigger: gpuhealv1.Trigger{Type: gpuhealv1.ConditionGPUHealAcceleratorHealthy, Status: metav1.ConditionFalse, Reason: "R" + evil}},
		Status: gpuhealv1.NodeRemediationStatus{Phase: gpuhealv1.PhaseDraining, Phases: []gpuhealv1.PhaseTransition{
			{Phase: gpuhealv1.PhaseDraining, Time: metav1.NewMicroTime(now), Message: "evicting " + evil}}},
	}
	out, code := fakeRunner(t, fakeCluster(t, []client.Object{n, r}...))("describe", "node", "gpu-evil")
	if code != 0 || !strings.Contains(out, "GPU 3") || !strings.Contains(out, "evicting") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	assertTerminalSafe(t, "describe node", out)
	if strings.Contains(out, "\nFAKE ROW") {
		t.Errorf("a condition message started a line of its own:\n%s", out)
	}
}

func TestIncidentTableIsTerminalSafe(t *testing.T) {
	var b bytes.Buffer
	now := time.Now()
	incs := []incident{{Incident: "i-1", Node: "gpu-evil", Opened: now, Last: now, Action: "Reboot", Outcome: "Failed", Reason: "X" + evil}}
	if err := writeIncidentTable(&b, incs, now, true); err != nil {
		t.Fatal(err)
	}
	assertTerminalSafe(t, "incidents table", b.String())
}

func TestDiagnoseIsTerminalSafe(t *testing.T) {
	// /dev/kmsg escapes unprintable bytes as \xHH; the reader decodes them.
	line := `4,1,100,-;NVRM: Xid (PCI:0000:05:00): 79, pid=1, name=\x1b]0;owned\x07\x1b[2Jx\x0d, GPU has fallen off the bus.` + "\n"
	out, _ := runCLI(t, line, "diagnose", "--kmsg", "-", "--color", "never")
	if !strings.Contains(out, "XID79") {
		t.Fatalf("no XID79 finding:\n%s", out)
	}
	assertTerminalSafe(t, "diagnose table", out)
}
