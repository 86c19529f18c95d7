package cli

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	gpuhealv1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/auditapi/auditapitest"
	"github.com/gpuheal/gpuheal/internal/testenv"
)

// statusFleet is five GPU nodes, one of each state, plus a CPU node that
// the default selector leaves out.
func statusFleet(t *testing.T) *testenv.Env {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, gpuhealv1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	env := testenv.ForTest(t, testenv.Options{Scheme: scheme})
	ctx := t.Context()
	type spec struct {
		name, healthy, score, tier, warnings string
		gpuCond                              corev1.ConditionStatus
		reason                               string
		cordoned                             bool
	}
	for _, s := range []spec{
		{name: auditapitest.NodeA, healthy: "8", score: "97.0", tier: "gold", gpuCond: corev1.ConditionTrue, warnings: "0"},
		{name: "gpu-warned", healthy: "8", score: "88.0", tier: "silver", gpuCond: corev1.ConditionTrue, warnings: "1"},
		{name: auditapitest.NodeB, healthy: "7", score: "40.0", tier: "bronze", gpuCond: corev1.ConditionFalse, reason: "NvidiaXID79Error", cordoned: true},
		{name: "gpu-fixing", healthy: "8", score: "60.0", tier: "bronze", gpuCond: corev1.ConditionTrue, cordoned: true},
		{name: "gpu-cordoned", healthy: "8", score: "90.0", tier: "gold", gpuCond: corev1.ConditionTrue, cordoned: true},
	} {
		n := testenv.GPUNode(s.name)
		n.Labels[healthyGPUsLabel] = s.healthy
		n.Labels[tierLabel] = s.tier
		n.Annotations[scoreAnnotation] = s.score
		if s.warnings != "" {
			n.Annotations[activeWarningsAnnotation] = s.warnings
		}
		if s.cordoned {
			n.Annotations[cordonedByAnnotation] = "gpuheal"
		}
		n.Spec.Unschedulable = s.cordoned
		status := n.Status
		if err := env.Client.Create(ctx, n); err != nil {
			t.Fatal(err)
		}
		n.Status = status
		n.Status.Conditions = []corev1.NodeCondition{
			{Type: "AcceleratedHardwareReady", Status: s.gpuCond, Reason: s.reason, Message: "GPU 3 fell off the bus", LastTransitionTime: metav1.Now()},
			{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastTransitionTime: metav1.Now()},
		}
		if err := env.Client.Status().Update(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	cpu := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "cpu-only"}}
	if err := env.Client.Create(ctx, cpu); err != nil {
		t.Fatal(err)
	}
	for node, phase := range map[string]gpuhealv1.Phase{"gpu-fixing": gpuhealv1.PhaseDraining, auditapitest.NodeA: gpuhealv1.PhaseSucceeded} {
		r := &gpuhealv1.NodeRemediation{
			ObjectMeta: metav1.ObjectMeta{Name: node + "-incident"},
			Spec: gpuhealv1.NodeRemediationSpec{NodeName: node, PolicyName: "default",
				Trigger: gpuhealv1.Trigger{Type: "AcceleratedHardwareReady", Status: corev1.ConditionFalse, Reason: "NvidiaXID48Error", Since: metav1.Now()}},
		}
		if err := env.Client.Create(ctx, r); err != nil {
			t.Fatal(err)
		}
		start := metav1.NewMicroTime(time.Now().Add(-90 * time.Second))
		r.Status = gpuhealv1.NodeRemediationStatus{Phase: phase, Action: gpuhealv1.ActionReboot, Phases: []gpuhealv1.PhaseTransition{
			{Phase: gpuhealv1.PhasePending, Time: start},
			{Phase: phase, Time: metav1.NewMicroTime(start.Add(30 * time.Second)), Message: "evicting 2 pods"},
		}}
		if err := env.Client.Status().Update(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	return env
}

func TestStatusWorstFirst(t *testing.T) {
	env := statusFleet(t)
	out, code := runCLI(t, "", "status", "--kubeconfig", env.Kubeconfig, "--color", "never")
	want := []string{
		`^5 nodes: 1 unhealthy, 1 remediating, 1 cordoned, 1 warning, 1 healthy$`,
		`^NODE +STATE +GPUS +PROBLEMS +SCHED +TIER +SCORE +REMEDIATION +AGE$`,
		`^` + auditapitest.NodeB + ` +unhealthy +7/8 +AcceleratedHardwareReady=False \(NvidiaXID79Error\) +cordoned +bronze +40\.0 +- +\d+s$`,
		`^gpu-fixing +remediating +8/8 +- +cordoned +bronze +60\.0 +Draining \(Reboot\) +\d+s$`,
		`^gpu-cordoned +cordoned +8/8 +- +cordoned +gold +90\.0 +- +\d+s$`,
		`^gpu-warned +warning +8/8 +warn: 1 active +ok +silver +88\.0 +- +\d+s$`,
		`^` + auditapitest.NodeA + ` +healthy +8/8 +- +ok +gold +97\.0 +- +\d+s$`,
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if code != 0 || len(lines) != len(want) {
		t.Fatalf("exit %d, %d lines, want %d:\n%s", code, len(lines), len(want), out)
	}
	for i, re := range want {
		if !regexp.MustCompile(re).MatchString(lines[i]) {
			t.Errorf("line %d %q does not match %s", i, lines[i], re)
		}
	}

	out, code = runCLI(t, "", "status", "--kubeconfig", env.Kubeconfig, "--color", "always")
	if code != 0 || !strings.Contains(out, "\x1b[31m"+auditapitest.NodeB) || !strings.Contains(out, "\x1b[32m"+auditapitest.NodeA) {
		t.Errorf("--color always: the unhealthy row is not red or the healthy one not green:\n%q", out)
	}

	out, code = runCLI(t, "", "status", "--kubeconfig", env.Kubeconfig, "-o", "json", "--selector", "")
	var rows []fleetNode
	if err := json.Unmarshal([]byte(out), &rows); code != 0 || err != nil {
		t.Fatalf("exit %d, %v:\n%s", code, err, out)
	}
	if len(rows) != 6 || rows[0].State != stateUnhealthy || rows[1].Incident != "gpu-fixing-incident" {
		t.Errorf("json rows (all nodes) = %+v", rows)
	}

	out, code = runCLI(t, "", "status", "--kubeconfig", env.Kubeconfig, "--selector", "a=(")
	if code == 0 || !strings.Contains(out, `--selector "a=("`) {
		t.Errorf("a bad selector gave exit %d: %s", code, out)
	}
}

func TestDescribeNode(t *testing.T) {
	env := statusFleet(t)
	db := auditDB(t, time.Now().UTC())
	out, code := runCLI(t, "", "describe", "node", "gpu-fixing", "--kubeconfig", env.Kubeconfig, "--audit-db", db)
	for _, want := range []string{
		"State:         remediating",
		"GPUs healthy:  8/8 (NVIDIA-H100-80GB-HBM3)",
		"Health:        score 60.0, tier bronze",
		"Scheduling:    cordoned by gpuheal",
		"gpu-fixing-incident",
		"Draining   evicting 2 pods",
		"no incidents: nothing lowers this node's score",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("describe lacks %q:\n%s", want, out)
		}
	}
	if code != 0 {
		t.Fatalf("exit %d", code)
	}

	out, code = runCLI(t, "", "describe", "node", auditapitest.NodeA, "--kubeconfig", env.Kubeconfig, "--audit-db", db)
	if code != 0 || !strings.Contains(out, auditapitest.DoneIncident) || !strings.Contains(out, "Succeeded") {
		t.Errorf("describe of %s lacks its audit history:\n%s", auditapitest.NodeA, out)
	}
	out, code = runCLI(t, "", "describe", "node", "no-such-node", "--kubeconfig", env.Kubeconfig)
	if code == 0 || !strings.Contains(out, "reading node no-such-node") {
		t.Errorf("a missing node gave exit %d: %s", code, out)
	}
}
