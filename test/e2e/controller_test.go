//go:build integration

package e2e

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/testenv"
	"github.com/gpuheal/gpuheal/internal/testenv/testcluster"
	"github.com/gpuheal/gpuheal/internal/testproc"
)

// TestControllerBinaryRecordsAndServesAudit runs the gpuheal-controller
// binary as shipped (SQLite audit log, kwok provider) through one incident,
// then reads it back with the gpuheal CLI from the controller's audit API
// on its metrics port, checks the chain, and finds the health score on the
// node.
func TestControllerBinaryRecordsAndServesAudit(t *testing.T) {
	t.Parallel()
	env := testcluster.Start(t, testenv.Options{Kwok: true, Scheme: benchScheme(t)})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	names, err := testenv.CreateGPUNodes(ctx, env.Client, "ctl", 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := testenv.WaitNodesReady(ctx, env.Client, names); err != nil {
		t.Fatal(err)
	}
	half := intstr.FromString("50%")
	policy := &v1alpha1.RemediationPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "ctl"},
		Spec: v1alpha1.RemediationPolicySpec{
			UnhealthyConditions: []v1alpha1.UnhealthyCondition{{Type: v1alpha1.ConditionGPUHealAcceleratorHealthy, Status: metav1.ConditionFalse, For: metav1.Duration{Duration: time.Second}}},
			Provider:            "kwok",
			RecoveryHold:        &metav1.Duration{Duration: time.Second},
			MaxUnhealthy:        &half, // the default 20% of two nodes would hold every incident
		},
	}
	if err := env.Client.Create(ctx, policy); err != nil {
		t.Fatal(err)
	}
	cli := buildBinary(t, "github.com/gpuheal/gpuheal/cmd/gpuheal", "gpuheal")
	metricsPort := startControllerBinary(t, env.Kubeconfig, "--kwok-boot-delay=2s", "--poll-interval=200ms",
		"--score-interval=200ms", "--audit-sqlite-path="+t.TempDir()+"/audit.db")

	node := names[0]
	breakNode(ctx, t, env.Client, node)
	var nr v1alpha1.NodeRemediation
	testproc.UntilTrue(ctx, t, "incident Succeeded", func() bool {
		var list v1alpha1.NodeRemediationList
		if env.Client.List(ctx, &list) != nil || len(list.Items) != 1 {
			return false
		}
		nr = list.Items[0]
		return nr.Status.Phase == v1alpha1.PhaseSucceeded
	})

	url := fmt.Sprintf("--controller-url=http://127.0.0.1:%d", metricsPort)
	out := runCLI(t, cli, 0, "incidents", url, "--node", node)
	if !strings.Contains(out, nr.Name) || !strings.Contains(out, "Replace") || !strings.Contains(out, "Succeeded") {
		t.Errorf("gpuheal incidents does not show the incident %s replaced:\n%s", nr.Name, out)
	}
	if out := runCLI(t, cli, 0, "audit", "verify", url); !strings.Contains(out, "OK") {
		t.Errorf("gpuheal audit verify:\n%s", out)
	}
	export := runCLI(t, cli, 0, "audit", "export", url, "--format", "jsonl")
	for _, kind := range []string{"Detected", "Decided", "Cordoned", "Drained", "ActionRequested", "Recovered", "Succeeded"} {
		if !strings.Contains(export, `"kind":"`+kind+`"`) {
			t.Errorf("audit export lacks a %s record:\n%s", kind, export)
		}
	}
	// The replacement is a fresh node: gold. The other node never failed.
	testproc.UntilTrue(ctx, t, "health score on the untouched node", func() bool {
		var n corev1.Node
		return env.Client.Get(ctx, types.NamespacedName{Name: names[1]}, &n) == nil &&
			n.Annotations[v1alpha1.AnnotationHealthScore] == "100.0" && n.Labels[v1alpha1.LabelHealthTier] == "gold"
	})
}

// runCLI runs the gpuheal binary and checks its exit code.
func runCLI(t *testing.T, bin string, wantCode int, args ...string) string {
	t.Helper()
	out, err := exec.Command(bin, args...).CombinedOutput()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running gpuheal %v: %v", args, err)
	}
	if code != wantCode {
		t.Fatalf("gpuheal %v exited %d, want %d:\n%s", args, code, wantCode, out)
	}
	return string(out)
}
