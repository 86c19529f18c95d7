//go:build integration

package nodestatus

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/agent/kubecore"
	"github.com/gpuheal/gpuheal/internal/analyzer"
	"github.com/gpuheal/gpuheal/internal/testenv"
	"github.com/gpuheal/gpuheal/internal/testenv/testcluster"
)

// TestAgentMayWriteOnlyItsOwnNode applies the shipped RBAC and
// ValidatingAdmissionPolicy to the real API server, gives the agent's
// ServiceAccount a token bound to a pod on node A, and patches conditions
// the way the agent does: node A is allowed, node B is denied.
func TestAgentMayWriteOnlyItsOwnNode(t *testing.T) {
	o := startOwnNode(t)
	ctx, cs, agent, cfg, nodeA, nodeB := o.ctx, o.cs, o.agent, o.cfg, o.nodeA, o.nodeB
	cond := []analyzer.ConditionStatus{{Type: v1alpha1.ConditionGPUHealAcceleratorHealthy, Status: analyzer.StatusTrue}}

	if err := PatchConditions(ctx, agent, nodeA, cond, time.Now()); err != nil {
		t.Fatalf("patching its own node A: %v", err)
	}
	n, err := cs.CoreV1().Nodes().Get(ctx, nodeA, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range n.Status.Conditions {
		found = found || (c.Type == v1alpha1.ConditionGPUHealAcceleratorHealthy && c.Status == corev1.ConditionTrue)
	}
	if !found {
		t.Fatalf("node A conditions after the allowed patch: %+v", n.Status.Conditions)
	}
	label := fmt.Appendf(nil, `{"metadata":{"labels":{%q:"8"}}}`, v1alpha1.LabelGPUHealthyCount)
	if err := agent.Patch(types.MergePatchType).Resource("nodes").Name(nodeA).Body(label).Do(ctx).Error(); err != nil {
		t.Fatalf("labelling its own node A: %v", err)
	}
	if err := agent.Patch(types.MergePatchType).Resource("nodes").Name(nodeB).Body(label).Do(ctx).Error(); !apierrors.IsForbidden(err) {
		t.Fatalf("labelling node B: %v, want forbidden", err)
	}
	// The predictor's risk annotation, as the agent writes it.
	if err := PatchRiskAnnotation(ctx, agent, nodeA, "0.42"); err != nil {
		t.Fatalf("annotating its own node A: %v", err)
	}
	if err := PatchRiskAnnotation(ctx, agent, nodeB, "0.42"); !apierrors.IsForbidden(err) {
		t.Fatalf("annotating node B: %v, want forbidden", err)
	}

	// A token of the same ServiceAccount not bound to a pod names no node:
	// it may write none.
	unbound, err := cs.CoreV1().ServiceAccounts("gpuheal").CreateToken(ctx, "gpuheal-agent", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ucfg := rest.CopyConfig(cfg)
	ucfg.BearerToken = unbound.Status.Token
	uc, err := kubecore.ClientFor(ucfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := PatchConditions(ctx, uc, nodeA, cond, time.Now()); !apierrors.IsForbidden(err) {
		t.Fatalf("unbound token patching node A: %v, want forbidden", err)
	}
	// RBAC still bounds the rest: the agent cannot delete a node.
	if err := agent.Delete().Resource("nodes").Name(nodeB).Do(ctx).Error(); !apierrors.IsForbidden(err) {
		t.Fatalf("deleting node B: %v, want forbidden", err)
	}
}

// ownNode is the scene of the own-node policy tests: the shipped RBAC and
// policies applied, two GPU nodes, and a client of the agent's
// ServiceAccount whose token is bound to a pod on node A.
type ownNode struct {
	ctx          context.Context
	env          *testenv.Env
	cs           kubernetes.Interface
	agent        rest.Interface
	cfg          *rest.Config
	nodeA, nodeB string
}

func startOwnNode(t *testing.T) *ownNode {
	t.Helper()
	env := testcluster.Start(t, testenv.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	cs := kubernetes.NewForConfigOrDie(env.Config)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "gpuheal"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	root, err := testenv.RepoRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"agent-rbac.yaml", "agent-node-policy.yaml"} {
		applyFile(ctx, t, env, filepath.Join(root, "deploy", f))
	}
	nodes, err := testenv.CreateGPUNodes(ctx, env.Client, "own", 2)
	if err != nil {
		t.Fatal(err)
	}
	nodeA, nodeB := nodes[0], nodes[1]

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "agent-a", Namespace: "gpuheal"},
		Spec: corev1.PodSpec{NodeName: nodeA, ServiceAccountName: "gpuheal-agent",
			Containers: []corev1.Container{{Name: "agent", Image: "gpuheal-agent"}}},
	}
	if pod, err = cs.CoreV1().Pods("gpuheal").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := cs.CoreV1().ServiceAccounts("gpuheal").CreateToken(ctx, "gpuheal-agent", &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{
			Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := rest.AnonymousClientConfig(env.Config)
	cfg.BearerToken = tr.Status.Token
	agent, err := kubecore.ClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cond := []analyzer.ConditionStatus{{Type: v1alpha1.ConditionGPUHealAcceleratorHealthy, Status: analyzer.StatusTrue}}
	// The policy takes effect once the API server's policy cache has it.
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		err := PatchConditions(ctx, agent, nodeB, cond, time.Now())
		if apierrors.IsForbidden(err) && strings.Contains(err.Error(), "may only write its own Node") {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("patching node B was never denied by the policy; last result: %v", err)
		case <-tick.C:
		}
	}
	return &ownNode{ctx: ctx, env: env, cs: cs, agent: agent, cfg: cfg, nodeA: nodeA, nodeB: nodeB}
}

// applyFile creates every object of a multi-document manifest.
func applyFile(ctx context.Context, t *testing.T, env *testenv.Env, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var u unstructured.Unstructured
		if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
			return
		} else if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(u.Object) == 0 {
			continue
		}
		if err := env.Client.Create(ctx, &u); err != nil {
			t.Fatalf("%s: creating %s %s: %v", path, u.GetKind(), u.GetName(), err)
		}
	}
}
