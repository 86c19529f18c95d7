//go:build integration

package remediation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
)

// noKubeletLogs is a kubelet that cannot serve logs (kwok's nodes have
// none): the controller falls back to the termination message.
type noKubeletLogs struct{}

func (noKubeletLogs) podLog(context.Context, string, string, string) ([]byte, error) {
	return nil, errors.New("the kubelet serves no logs")
}

// TestGateJobChecksOnAPIServer: on a real API server, a rebooted node
// passes the agent's check and a DCGM Job check and comes back, validated;
// another fails its DCGM check and is replaced, never uncordoned. The
// test plays the agent and, for a Job of another manager (managedBy), the
// Job controller and the kubelet, with a real DCGM output.
func TestGateJobChecksOnAPIServer(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "gate", 2)
	pol := fastPolicy("gate")
	timeout := &metav1.Duration{Duration: time.Minute}
	pol.Spec.Validation = &v1alpha1.ValidationSpec{Checks: []v1alpha1.ValidationCheck{
		{Name: "agent", Kind: v1alpha1.CheckAgent, Timeout: timeout},
		{Name: "dcgm", Kind: v1alpha1.CheckDCGM, Level: 2, Timeout: timeout},
	}}
	h.create(pol)
	h.startController(controllerConfig{checks: CheckOptions{Namespace: "default", JobsManagedBy: "gpuheal.io/test", Logs: noKubeletLogs{}}})
	for i, tc := range []struct {
		output string
		passes bool
	}{
		{"dcgm-text-3.3.3-a100-pass.txt", true},
		{"dcgm-json-3x-handwritten-gpu3-memory-fail.json", false},
	} {
		node := h.nodes[i]
		h.breakGPU(node, "reboot")
		h.waitPhase(node, v1alpha1.PhaseValidating, time.Minute)
		if n, _ := h.node(node); !n.Spec.Unschedulable || !hasValidatingTaint(n) {
			t.Fatalf("%s: not held while validated: %+v", node, n.Spec)
		}
		h.agentReport(node)
		var job batchv1.Job
		h.waitFor("the DCGM check's Job on "+node, 30*time.Second, func() (bool, error) {
			var jobs batchv1.JobList
			err := h.c.List(t.Context(), &jobs, client.MatchingLabels{v1alpha1.LabelCheckNode: node})
			if len(jobs.Items) == 1 {
				job = jobs.Items[0]
			}
			return len(jobs.Items) == 1, err
		})
		finishCheckJobOnAPIServer(t, h, &job, node, capture(t, tc.output), tc.passes)
		if tc.passes {
			nr := h.waitPhase(node, v1alpha1.PhaseSucceeded, 30*time.Second)
			n, _ := h.node(node)
			if n.Spec.Unschedulable || hasValidatingTaint(n) || n.Annotations[v1alpha1.AnnotationValidatedAt] == "" || len(nr.Status.Validation) != 2 {
				t.Errorf("%s after passing: %+v %v, results %+v", node, n.Spec, n.Annotations, nr.Status.Validation)
			}
		} else {
			h.waitFor(node+" replaced after its failed check", 30*time.Second, func() (bool, error) {
				items := h.incidents(node)
				if len(items) != 1 {
					return false, nil
				}
				st := items[0].Status
				if len(st.Validation) < 2 || st.Validation[1].Outcome != v1alpha1.CheckFailed {
					return false, fmt.Errorf("results %+v", st.Validation)
				}
				return st.Action == v1alpha1.ActionReplace && st.Attempts == 2, nil
			})
		}
		h.waitFor("the Job of "+node+" deleted", 30*time.Second, func() (bool, error) {
			err := h.c.Get(t.Context(), client.ObjectKeyFromObject(&job), &batchv1.Job{})
			return client.IgnoreNotFound(err) == nil && err != nil, client.IgnoreNotFound(err)
		})
	}
}

// agentReport is the agent reporting every check passed, now.
func (h *harness) agentReport(node string) {
	h.t.Helper()
	rep := v1alpha1.AgentChecks{Time: metav1.NewTime(time.Now().Add(time.Second))}
	for _, name := range v1alpha1.AgentCheckNames {
		rep.Checks = append(rep.Checks, v1alpha1.AgentCheck{Name: name, Passed: true})
	}
	b, _ := json.Marshal(rep)
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{v1alpha1.AnnotationAgentChecks: string(b)}}})
	if err := h.c.Patch(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, client.RawPatch(types.MergePatchType, patch)); err != nil {
		h.t.Fatal(err)
	}
}

// finishCheckJobOnAPIServer is finishCheckJob on the Job as it is now.
func finishCheckJobOnAPIServer(t *testing.T, h *harness, job *batchv1.Job, node, output string, succeeded bool) {
	t.Helper()
	if err := h.c.Get(t.Context(), client.ObjectKeyFromObject(job), job); err != nil {
		t.Fatal(err)
	}
	finishCheckJob(t.Context(), t, h.c, job, node, output, succeeded, time.Now())
}
