//go:build integration

package chart

import (
	"context"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/agent/kubecore"
	"github.com/gpuheal/gpuheal/internal/agent/nodestatus"
	"github.com/gpuheal/gpuheal/internal/analyzer"
	"github.com/gpuheal/gpuheal/internal/testenv"
	"github.com/gpuheal/gpuheal/internal/testenv/testcluster"
	"github.com/gpuheal/gpuheal/internal/testproc"
)

// agentAccessKinds are the kinds of the agent's access that the test
// applies: its identity, RBAC and admission policies (not its workload:
// no kubelet runs here).
var agentAccessKinds = map[string]bool{
	"ServiceAccount": true, "ClusterRole": true, "ClusterRoleBinding": true, "Role": true, "RoleBinding": true,
	"ValidatingAdmissionPolicy": true, "ValidatingAdmissionPolicyBinding": true,
}

// The chart rendered with agent.conditionTypes=eks (and
// remediationPolicy.create=false, which it needs), its agent RBAC and
// admission policies applied to a real API server: a token bound to the
// agent's pod on node A may write the EKS names AcceleratedHardwareReady
// and KernelReady on node A, and not gpuheal's own names — the agent may
// write only the names it publishes.
func TestEKSConditionTypesOnTheAPIServer(t *testing.T) {
	objs := decode(t, render(t, "--set", "agent.conditionTypes=eks", "--set", "remediationPolicy.create=false"))
	env := testcluster.Start(t, testenv.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs := kubernetes.NewForConfigOrDie(env.Config)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	applied := 0
	for _, o := range objs {
		if !agentAccessKinds[o.GetKind()] || !strings.HasPrefix(o.GetName(), "gpuheal-agent") {
			continue
		}
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatalf("creating %s %s: %v", o.GetKind(), o.GetName(), err)
		}
		applied++
	}
	if applied < 5 {
		t.Fatalf("applied %d of the agent's access objects; the render lacks some", applied)
	}
	nodes, err := testenv.CreateGPUNodes(ctx, env.Client, "eks-names", 2)
	if err != nil {
		t.Fatal(err)
	}
	nodeA, nodeB := nodes[0], nodes[1]
	agent := boundAgentClient(ctx, t, env.Config, cs, nodeA)

	cond := func(types ...string) []analyzer.ConditionStatus {
		var out []analyzer.ConditionStatus
		for _, ty := range types {
			out = append(out, analyzer.ConditionStatus{Type: ty, Status: analyzer.StatusTrue})
		}
		return out
	}
	// The policy takes effect once the API server's policy cache has it:
	// until then RBAC alone would let node B be written.
	testproc.Eventually(t, time.Minute, "the own-node policy denying node B", func(ctx context.Context) (bool, error) {
		err := nodestatus.PatchConditions(ctx, agent, nodeB, cond(v1alpha1.ConditionAcceleratedHardwareReady), time.Now())
		if apierrors.IsForbidden(err) && strings.Contains(err.Error(), "may only write its own Node") {
			return true, nil
		}
		return false, err
	})

	for _, ty := range []string{v1alpha1.ConditionGPUHealAcceleratorHealthy, v1alpha1.ConditionGPUHealKernelHealthy, v1alpha1.ConditionGPUHealNetworkingHealthy} {
		err := nodestatus.PatchConditions(ctx, agent, nodeA, cond(ty), time.Now())
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "may change only the Node conditions") {
			t.Errorf("writing %s on its own node with conditionTypes=eks: %v, want forbidden", ty, err)
		}
	}
	eks := cond(v1alpha1.ConditionAcceleratedHardwareReady, v1alpha1.ConditionKernelReady, v1alpha1.ConditionNetworkingReady)
	if err := nodestatus.PatchConditions(ctx, agent, nodeA, eks, time.Now()); err != nil {
		t.Fatalf("writing the EKS names on its own node: %v", err)
	}
	n, err := cs.CoreV1().Nodes().Get(ctx, nodeA, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, c := range n.Status.Conditions {
		have[string(c.Type)] = true
	}
	for _, ty := range []string{v1alpha1.ConditionAcceleratedHardwareReady, v1alpha1.ConditionKernelReady, v1alpha1.ConditionNetworkingReady} {
		if !have[ty] {
			t.Errorf("node A lacks %s after the allowed patch: %+v", ty, n.Status.Conditions)
		}
	}
	for _, ty := range []string{v1alpha1.ConditionGPUHealAcceleratorHealthy, v1alpha1.ConditionGPUHealKernelHealthy, v1alpha1.ConditionGPUHealNetworkingHealthy} {
		if have[ty] {
			t.Errorf("node A has %s, which the agent may not write with conditionTypes=eks", ty)
		}
	}
}

// boundAgentClient is a client of the agent's ServiceAccount whose token
// is bound to a pod on node, as the kubelet gives the agent's pod.
func boundAgentClient(ctx context.Context, t *testing.T, cfg *rest.Config, cs kubernetes.Interface, node string) rest.Interface {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "agent-" + node, Namespace: namespace},
		Spec: corev1.PodSpec{NodeName: node, ServiceAccountName: "gpuheal-agent",
			Containers: []corev1.Container{{Name: "agent", Image: "gpuheal-agent"}}},
	}
	pod, err := cs.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, "gpuheal-agent", &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{
			Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	acfg := rest.AnonymousClientConfig(cfg)
	acfg.BearerToken = tr.Status.Token
	c, err := kubecore.ClientFor(acfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
