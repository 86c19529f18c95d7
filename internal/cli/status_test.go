package cli

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	gpuhealv1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/auditapi/auditapitest"
	"github.com/gpuheal/gpuheal/internal/fleetview"
)

func TestStatus(t *testing.T) {
	checkStatus(t, fakeRunner(t, fakeFleet(t)))
}

func TestDescribeNode(t *testing.T) {
	checkDescribe(t, fakeRunner(t, fakeFleet(t)), auditDB(t, time.Now().UTC()))
}

// checkStatus runs `gpuheal status` on fleetObjects.
func checkStatus(t *testing.T, run runner) {
	t.Helper()
	out, code := run("status", "--color", "never")
	matchLines(t, out, code,
		`^5 nodes: 1 unhealthy, 1 remediating, 1 cordoned, 1 warning, 1 healthy$`,
		`^NODE +STATE +GPUS +PROBLEMS +SCHED +TIER +SCORE +REMEDIATION +AGE$`,
		`^`+auditapitest.NodeB+` +unhealthy +7/8 +GPUHealAcceleratorHealthy=False \(NvidiaXID79Error\) +cordoned +bronze +40\.0 +- +\d+s$`,
		`^gpu-fixing +remediating +8/8 +- +cordoned +bronze +60\.0 +Draining \(Reboot\) +\d+s$`,
		`^gpu-cordoned +cordoned +8/8 +- +cordoned +gold +90\.0 +- +\d+s$`,
		`^gpu-warned +warning +8/8 +warn: 1 active +ok +silver +88\.0 +- +\d+s$`,
		`^`+auditapitest.NodeA+` +healthy +8/8 +- +ok +gold +97\.0 +- +\d+s$`,
	)

	out, code = run("status", "--color", "always")
	if code != 0 || !strings.Contains(out, "\x1b[31m"+auditapitest.NodeB) || !strings.Contains(out, "\x1b[32m"+auditapitest.NodeA) {
		t.Errorf("--color always: the unhealthy row is not red or the healthy one not green:\n%q", out)
	}

	// Nodes by name, in the order given; wide adds the incident.
	out, code = run("status", "gpu-fixing", "gpu-warned", "-o", "wide", "--color", "never")
	matchLines(t, out, code,
		`^2 nodes: 0 unhealthy, 1 remediating, 0 cordoned, 1 warning, 0 healthy$`,
		`^NODE +STATE .* +AGE +INCIDENT +WARNINGS$`,
		`^gpu-fixing +remediating .* +gpu-fixing-incident +0$`,
		`^gpu-warned +warning .* +- +1$`,
	)

	// The JSON is the fleet view, worst first, as the status page's.
	out, code = run("status", "-o", "json", "--selector", "")
	var v fleetview.View
	if err := json.Unmarshal([]byte(out), &v); code != 0 || err != nil {
		t.Fatalf("exit %d, %v:\n%s", code, err, out)
	}
	if len(v.Nodes) != 6 || v.Nodes[0].State != fleetview.StateUnhealthy || v.Nodes[1].Incident != "gpu-fixing-incident" || v.Summary.Nodes != 6 {
		t.Errorf("json view (all nodes) = %+v", v)
	}
	out, code = run("status", "-o", "yaml", auditapitest.NodeB)
	var y fleetview.View
	if err := yaml.Unmarshal([]byte(out), &y); code != 0 || err != nil || len(y.Nodes) != 1 || y.Nodes[0].Name != auditapitest.NodeB {
		t.Errorf("yaml of %s: exit %d, %v, %+v:\n%s", auditapitest.NodeB, code, err, y, out)
	}

	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"status", "--selector", "a=("}, `--selector "a=("`},
		{[]string{"status", "-o", "xml"}, `--output (-o) "xml": want one of table, wide, json, yaml`},
		{[]string{"status", "no-such-node"}, "reading node no-such-node"},
	} {
		if out, code := run(bad.args...); code == 0 || !strings.Contains(out, bad.want) {
			t.Errorf("%v: exit %d %q, want an error naming %s", bad.args, code, out, bad.want)
		}
	}
}

// checkDescribe runs `gpuheal describe node` on fleetObjects, with the
// audit fixture in the SQLite file db.
func checkDescribe(t *testing.T, run runner, db string) {
	t.Helper()
	out, code := run("describe", "node", "gpu-fixing", "--audit-db", db)
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
	out, code = run("describe", "node", auditapitest.NodeA, "--audit-db", db)
	if code != 0 || !strings.Contains(out, auditapitest.DoneIncident) || !strings.Contains(out, "Succeeded") {
		t.Errorf("describe of %s lacks its audit history:\n%s", auditapitest.NodeA, out)
	}
	out, code = run("describe", "node", "no-such-node")
	if code == 0 || !strings.Contains(out, "reading node no-such-node") {
		t.Errorf("a missing node gave exit %d: %s", code, out)
	}
}

// matchLines checks a zero exit and that each line of out matches the
// regular expression in the same place.
func matchLines(t *testing.T, out string, code int, want ...string) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if code != 0 || len(lines) != len(want) {
		t.Fatalf("exit %d, %d lines, want %d:\n%s", code, len(lines), len(want), out)
	}
	for i, re := range want {
		if !regexp.MustCompile(re).MatchString(lines[i]) {
			t.Errorf("line %d %q does not match %s", i, lines[i], re)
		}
	}
}

// TestStatusShowsProviderNotReady: a policy whose provider failed its
// preflight is named above the table, with what failed, on one safe line.
func TestStatusShowsProviderNotReady(t *testing.T) {
	v := fleetview.View{Nodes: []fleetview.Row{}, Policies: []fleetview.Policy{
		{Name: "ok", ProviderReady: "True", ProviderReason: gpuhealv1.ReasonPreflightPassed, ProviderMessage: "fine"},
		{Name: "p5", ProviderReady: "False", ProviderReason: gpuhealv1.ReasonPermissionDenied,
			ProviderMessage: "provider aws: arn:aws:sts::1:assumed-role/x may not ec2:RebootInstances" + evil + "\nFAKE"},
	}}
	var b strings.Builder
	if err := writeFleetTable(&b, v, time.Now(), false, false); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	lines := strings.Split(out, "\n")
	if len(lines) < 2 || !strings.HasPrefix(lines[1], "policy p5: provider not ready (PermissionDenied): provider aws: arn:aws:sts::1:assumed-role/x may not ec2:RebootInstances") {
		t.Errorf("status does not name policy p5's denied action on the line after the summary:\n%s", out)
	}
	if strings.Contains(out, "policy ok") || strings.Contains(out, "\nFAKE") {
		t.Errorf("a ready policy is listed, or the message broke the line:\n%s", out)
	}
	assertTerminalSafe(t, "status", out)
}
