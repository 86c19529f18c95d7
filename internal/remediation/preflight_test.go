package remediation

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/provider"
	"github.com/gpuheal/gpuheal/internal/provider/fake"
)

func preflightNode(name, providerID string, labels map[string]string) corev1.Node {
	l := map[string]string{v1alpha1.LabelNvidiaGPUPresent: "true"}
	for k, v := range labels {
		l[k] = v
	}
	return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}, Spec: corev1.NodeSpec{ProviderID: providerID}}
}

// TestPreflightCheckGroupsNodesByProvider: a guessing policy's nodes are
// checked by the provider each would use; one whose provider is not
// configured makes the policy not ready, named as such.
func TestPreflightCheckGroupsNodesByProvider(t *testing.T) {
	ec2, kp := fake.New(provider.AWS), fake.New(provider.Karpenter)
	l := &preflightLoop{providers: provider.Set{provider.AWS: ec2, provider.Karpenter: kp}}
	p, err := newPolicy(&v1alpha1.RemediationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec: v1alpha1.RemediationPolicySpec{NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{v1alpha1.LabelNvidiaGPUPresent: "true"}}}})
	if err != nil {
		t.Fatal(err)
	}
	nodes := []corev1.Node{
		preflightNode("asg-1", "aws:///us-east-1a/i-0123456789abcdef0", nil),
		preflightNode("kp-1", "aws:///us-east-1a/i-0fedcba9876543210", map[string]string{v1alpha1.LabelKarpenterNodePool: "gpu"}),
	}
	res := l.check(context.Background(), p, nodes)
	if !res.ready || !strings.Contains(res.message, "aws (1 nodes)") || !strings.Contains(res.message, "aws+karpenter (1 nodes)") {
		t.Errorf("result = %+v, want ready with aws and aws+karpenter one node each", res)
	}
	if c := ec2.CallsTo(fake.MethodPreflight); len(c) != 2 || c[0].Node != "asg-1" || c[1].Node != "kp-1" {
		t.Errorf("aws preflight calls = %+v, want asg-1 alone, then kp-1 (through the split)", c)
	}

	kp.SetPreflight(&provider.PreflightError{Reason: v1alpha1.ReasonPermissionDenied, Err: errors.New("may not delete nodeclaims.karpenter.sh")})
	res = l.check(context.Background(), p, nodes)
	if res.ready || res.reason != v1alpha1.ReasonPermissionDenied || !strings.Contains(res.message, "delete nodeclaims") {
		t.Errorf("result with karpenter denied = %+v", res)
	}

	nodes = append(nodes, preflightNode("capi-1", "", map[string]string{}))
	l.providers = provider.Set{provider.AWS: ec2, provider.Karpenter: fake.New(provider.Karpenter)}
	res = l.check(context.Background(), p, nodes)
	if res.ready || res.reason != v1alpha1.ReasonProviderNotConfigured || !strings.Contains(res.message, `provider "none" is not configured`) {
		t.Errorf("result with a node needing an unconfigured provider = %+v", res)
	}
	if c := res.condition(); c.Status != metav1.ConditionFalse || c.Type != v1alpha1.ConditionProviderReady {
		t.Errorf("condition = %+v", c)
	}
}

// TestProviderNotReadyHolds: a failed preflight holds a policy's incidents,
// except for nodes in no Auto Scaling group (reboots still work there).
func TestProviderNotReadyHolds(t *testing.T) {
	for reason, want := range map[string]bool{
		v1alpha1.ReasonPermissionDenied: true, v1alpha1.ReasonCredentialsUnavailable: true, v1alpha1.ReasonPreflightFailed: true,
		v1alpha1.ReasonProviderNotConfigured: true, v1alpha1.ReasonNotInAutoScalingGroup: false,
	} {
		p, err := newPolicy(&v1alpha1.RemediationPolicy{Spec: v1alpha1.RemediationPolicySpec{Provider: provider.AWS},
			Status: v1alpha1.RemediationPolicyStatus{Conditions: []metav1.Condition{
				{Type: v1alpha1.ConditionProviderReady, Status: metav1.ConditionFalse, Reason: reason}}}})
		if err != nil {
			t.Fatal(err)
		}
		if got := providerNotReady(p) != nil; got != want {
			t.Errorf("reason %s holds incidents: %v, want %v", reason, got, want)
		}
	}
	p, _ := newPolicy(&v1alpha1.RemediationPolicy{})
	if providerNotReady(p) != nil {
		t.Error("a policy never checked holds its incidents")
	}
	// A guessed provider comes from the node: a node labelled as
	// Karpenter's where karpenter is not enabled fails alone.
	p, _ = newPolicy(&v1alpha1.RemediationPolicy{Status: v1alpha1.RemediationPolicyStatus{Conditions: []metav1.Condition{
		{Type: v1alpha1.ConditionProviderReady, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonProviderNotConfigured}}}})
	if providerNotReady(p) != nil {
		t.Error("a guessed provider that is not configured holds the whole policy")
	}
}
