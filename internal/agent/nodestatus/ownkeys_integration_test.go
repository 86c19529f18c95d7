//go:build integration

package nodestatus

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	testclock "k8s.io/utils/clock/testing"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/testenv"
)

// TestAgentMayChangeOnlyWhatItOwns: on its own Node the agent's token may
// write exactly what the agent writes (the wire golden's labels,
// annotations and conditions, and Events about the Node), and every other
// change is denied by the shipped policies with their own message.
func TestAgentMayChangeOnlyWhatItOwns(t *testing.T) {
	o := startOwnNode(t)
	ctx, agent, a := o.ctx, o.agent, o.nodeA

	// The Event policy may reach the API server's cache after the Node
	// policy did.
	events := NewEvents(agent, o.nodeB, testclock.NewFakePassiveClock(time.Now()))
	eventDenied := func() error { return events.Emit(ctx, "k", "GPUFailurePredicted", "x") }
	wait, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		err := eventDenied()
		if apierrors.IsForbidden(err) && strings.Contains(err.Error(), "Events about its own Node") {
			break
		}
		select {
		case <-wait.Done():
			t.Fatalf("an Event about node B was never denied by the policy; last result: %v", err)
		case <-tick.C:
		}
	}

	// Allowed: everything the agent writes, as the wire golden has it.
	root, err := testenv.RepoRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	golden, err := os.ReadFile(filepath.Join(root, "api/v1alpha1/testdata/agent-node.json"))
	if err != nil {
		t.Fatal(err)
	}
	var wire struct {
		Metadata struct {
			Labels      map[string]string `json:"labels"`
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
		Status struct {
			Conditions []json.RawMessage `json:"conditions"`
		} `json:"status"`
	}
	if err := json.Unmarshal(golden, &wire); err != nil {
		t.Fatal(err)
	}
	meta, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": wire.Metadata.Labels, "annotations": wire.Metadata.Annotations}})
	conds, _ := json.Marshal(map[string]any{"status": map[string]any{"conditions": wire.Status.Conditions}})
	allowed := []struct {
		name, sub string
		typ       types.PatchType
		body      string
	}{
		{"the golden's labels and annotations", "", types.MergePatchType, string(meta)},
		{"the golden's conditions", "status", types.StrategicMergePatchType, string(conds)},
		{"removing its advice", "", types.MergePatchType, fmt.Sprintf(`{"metadata":{"annotations":{%q:null}}}`, v1alpha1.AnnotationRecommendedActions)},
		{"its GPU reset answer", "", types.MergePatchType, fmt.Sprintf(`{"metadata":{"annotations":{%q:"{\"requestID\":\"r-reset-1\",\"outcome\":\"Running\"}"}}}`, v1alpha1.AnnotationGPUReset)},
	}
	for _, w := range allowed {
		if err := patch(o, a, w.sub, w.typ, w.body); err != nil {
			t.Errorf("%s on its own node: %v", w.name, err)
		}
	}
	own := NewEvents(agent, a, testclock.NewFakePassiveClock(time.Now()))
	for i := range 2 { // create, then count up
		if err := own.Emit(ctx, "k", "GPUFailurePredicted", "GPU 3\x1b]0;owned\x07\x1b[2J failing"); err != nil {
			t.Errorf("Event #%d about its own node: %v", i+1, err)
		}
	}
	// kubectl shows Event messages on terminals: no escape sequence.
	evs, err := o.cs.CoreV1().Events(EventNamespace).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + a})
	if err != nil || len(evs.Items) != 1 || evs.Items[0].Message != "GPU 3 failing" || evs.Items[0].Count != 2 {
		t.Errorf("Events of its own node: %v, %+v; want one, counted twice, message %q", err, evs, "GPU 3 failing")
	}

	// Denied: each write an attacker holding the agent's token would try.
	ready := `{"status":{"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady","message":"x","lastHeartbeatTime":"2026-12-01T11:00:00Z","lastTransitionTime":"2026-12-01T11:00:00Z"}]}}`
	denied := []struct {
		name, sub string
		typ       types.PatchType
		body      string
	}{
		{"cordon", "", types.MergePatchType, `{"spec":{"unschedulable":true}}`},
		{"a taint", "", types.MergePatchType, `{"spec":{"taints":[{"key":"evil","effect":"NoSchedule"}]}}`},
		{"an owner reference", "", types.MergePatchType, `{"metadata":{"ownerReferences":[{"apiVersion":"karpenter.sh/v1","kind":"NodeClaim","name":"claim-victim","uid":"u"}]}}`},
		{"a finalizer", "", types.MergePatchType, `{"metadata":{"finalizers":["evil.example/hold"]}}`},
		{"another label", "", types.MergePatchType, `{"metadata":{"labels":{"node-role.kubernetes.io/control-plane":""}}}`},
		{"the controller's tier label", "", types.MergePatchType, fmt.Sprintf(`{"metadata":{"labels":{%q:"gold"}}}`, v1alpha1.LabelHealthTier)},
		{"removing a label it does not own", "", types.MergePatchType, fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, v1alpha1.LabelNvidiaGPUPresent)},
		{"the opt-out annotation", "", types.MergePatchType, fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, v1alpha1.AnnotationRemediation, v1alpha1.RemediationDisabled)},
		{"the controller's replace annotation", "", types.MergePatchType, fmt.Sprintf(`{"metadata":{"annotations":{%q:"claim-victim"}}}`, v1alpha1.AnnotationReplaceNodeClaim)},
		{"a label through nodes/status", "status", types.MergePatchType, `{"metadata":{"labels":{"evil":"x"}}}`},
		{"the Ready condition", "status", types.StrategicMergePatchType, ready},
		{"capacity", "status", types.MergePatchType, `{"status":{"capacity":{"nvidia.com/gpu":"16"}}}`},
		{"addresses", "status", types.MergePatchType, `{"status":{"addresses":[{"type":"InternalIP","address":"10.9.9.9"}]}}`},
	}
	for _, d := range denied {
		err := patch(o, a, d.sub, d.typ, d.body)
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "gpuheal-agent may") {
			t.Errorf("%s on its own node: %v, want denied by the policy", d.name, err)
		}
	}
	if err := eventDenied(); !apierrors.IsForbidden(err) {
		t.Errorf("an Event about another node: %v, want denied", err)
	}
	podEvent := fmt.Sprintf(`{"apiVersion":"v1","kind":"Event","metadata":{"name":"evil","namespace":%q},"involvedObject":{"kind":"Pod","namespace":"default","name":"victim"},"reason":"Evil","message":"x","type":"Warning"}`, EventNamespace)
	related := fmt.Sprintf(`{"apiVersion":"v1","kind":"Event","metadata":{"name":"evil-2","namespace":%q},"involvedObject":{"kind":"Node","name":%q},"related":{"kind":"Node","name":%q},"reason":"Evil","message":"x","type":"Warning"}`, EventNamespace, a, o.nodeB)
	for name, body := range map[string]string{"about a pod": podEvent, "related to another node": related} {
		err := agent.Post().Namespace(EventNamespace).Resource("events").Body([]byte(body)).Do(ctx).Error()
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "Events about its own Node") {
			t.Errorf("an Event %s: %v, want denied by the policy", name, err)
		}
	}
}

// patch writes body to node (or its subresource sub) as the agent.
func patch(o *ownNode, node, sub string, typ types.PatchType, body string) error {
	req := o.agent.Patch(typ).Resource("nodes").Name(node).Body([]byte(body))
	if sub != "" {
		req = req.SubResource(sub)
	}
	return req.Do(o.ctx).Error()
}
